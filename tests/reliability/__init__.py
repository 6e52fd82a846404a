"""Fault injection: crashes, SCM faults, lost webhooks, lost caches, racing pushes."""
