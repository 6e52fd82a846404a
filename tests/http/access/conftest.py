"""Fixtures for the access tests: a real GitOps repository in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import GitOpsRepo


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    """A real bare GitOps repository: dry main, hydrated dev, staging and prod."""
    return GitOpsRepo.create(tmp_path)
