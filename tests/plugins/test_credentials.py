"""A plugin's git credentials: a failed first call breaks nothing; answers are reused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promoter.config import ExternalPlugin, Repository, ScmProvider
from promoter.errors import ScmUnavailable
from promoter.git.pool import MirrorPool
from scm_plugins.external import ExternalScm
from tests.gitrepo import GitSandbox

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]


def start(tmp_path: Path, **settings: Any) -> ExternalScm:
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings)
    return ExternalScm(
        provider=ScmProvider(name="ext", plugin=plugin), state_dir=str(tmp_path / "state")
    )


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    return sandbox


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[ExternalScm]:
    host = start(tmp_path, failCredentials=1)
    yield host
    host.close()


def test_a_plugin_failing_its_first_credentials_call_leaves_no_half_made_mirror(
    tmp_path: Path, remote: GitSandbox, flaky: ExternalScm
) -> None:
    repo = Repository(name="gitops", url=remote.url, scm_provider="ext")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: flaky.git_environment(repo=r))
    with pytest.raises(ScmUnavailable, match="token service down"):
        pool.fresh(repo)
    mirror = pool.fresh(repo)
    assert mirror.branch_sha("main") == remote.branch_sha("main")


def asked(record: Path) -> int:
    return record.read_text().splitlines().count("git/environment") if record.exists() else 0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("expires_in", "reused"), [(None, True), (3600, True), (30, False)])
def test_git_credentials_are_reused_until_shortly_before_their_stated_expiry(
    tmp_path: Path, expires_in: int | None, reused: bool
) -> None:
    record = tmp_path / "calls"
    settings: dict[str, Any] = {"record": str(record)}
    if expires_in is not None:
        settings["expiresIn"] = expires_in
    clock = Clock()
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings)
    host = ExternalScm(
        provider=ScmProvider(name="ext", plugin=plugin), state_dir=str(tmp_path), clock=clock
    )
    repo = Repository(name="gitops", url=str(tmp_path), scm_provider="ext")
    try:
        for _ in range(5):
            assert host.git_environment(repo=repo) == {"GIT_TERMINAL_PROMPT": "0"}
        assert asked(record) == (1 if reused else 5)
        clock.now += 120  # past the default minute, long before the stated hour
        host.git_environment(repo=repo)
        assert asked(record) == (2 if expires_in is None else 1 if reused else 6)
    finally:
        host.close()
