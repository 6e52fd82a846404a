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
