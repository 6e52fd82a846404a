"""Fixtures of the webhook tests: secrets in the environment and a running receiver app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webhooks.helpers import SECRET_ENV, Hooks, running_hooks


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    with running_hooks(tmp_path / "state") as running:
        yield running
