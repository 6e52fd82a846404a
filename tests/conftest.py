"""Shared test set-up: an isolated git identity and config, the genuine fixtures' path, and
nothing left running after the session (``tests.hygiene``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from promoter.redaction import KNOWN
from tests.fixture_paths import FIXTURES
from tests.hygiene import (
    _nothing_left_behind,
    _runtimes_stopped,
    pytest_configure,
    pytest_sessionfinish,
)

__all__ = ["_nothing_left_behind", "_runtimes_stopped", "pytest_configure", "pytest_sessionfinish"]

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200
)
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=200)
settings.register_profile("mutation", parent=settings.get_profile("default"), max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def genuine_fixtures() -> Path:
    """``tests/fixtures``: genuine third-party payloads, each with its provenance and licence."""
    return FIXTURES


@pytest.fixture(autouse=True, scope="session")
def _isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read the developer's git config and always have an identity."""
    home = tmp_path_factory.mktemp("git-home")
    saved = dict(os.environ)
    os.environ.update(
        {
            "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.invalid",
            "GIT_COMMITTER_NAME": "Test Committer",
            "GIT_COMMITTER_EMAIL": "committer@example.invalid",
        }
    )
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """Each test starts with no known secret: one test's token is not scrubbed from another's."""
    yield
    KNOWN.clear()


@pytest.fixture(autouse=True)
def _loopback_test_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """TestClient speaks to ``http://127.0.0.1`` unless told otherwise: the daemon answers
    only the Host names it serves (DNS rebinding), and starlette's ``testserver`` is none."""
    original = TestClient.__init__

    def init(self: TestClient, app: Any, base_url: str = "http://127.0.0.1", **kw: Any) -> None:
        original(self, app, base_url, **kw)

    monkeypatch.setattr(TestClient, "__init__", init)
