"""Fixtures of the Forgejo plugin's tests: the fake Forgejo over a real bare repository."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import init_bare

from .fake_forgejo import FakeForgejo

TOKEN = "forgejo-test-token-0123456789"
TOKEN_ENV = "PROMOTER_TEST_FORGEJO_TOKEN"
FULL_NAME = "acme/gitops"
BIN = Path(sys.executable).parent
"""Where pip installed the ``promoter-scm-forgejo`` console script (the venv's bin)."""


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "remote.git")


@pytest.fixture
def forgejo(bare: Path) -> Iterator[FakeForgejo]:
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, bare)
        yield fake
