"""Tests of ``promoter.daemon``, one folder for each of its rooms (docs/architecture.md)."""
