"""The local SCM packs the refs of a repository holding many loose ones when it first reads
it, as a git server would, and only in a repository owned by the daemon's own user."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.config import LocalProvider, Repository, ScmProvider
from scm_plugins.local import LocalScm
from scm_plugins.local.housekeeping import LOOSE_REFS, loose_refs
from tests.unit.test_local_scm import promotion_repository


def with_branches(path: Path, count: int) -> Path:
    """``count`` more branches at ``env``'s tip, each a loose ref as a push writes it."""
    tip = git(path, "rev-parse", "refs/heads/env").strip()
    for n in range(count):
        ref = path / "refs" / "heads" / "apps" / f"app-{n}"
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(tip + "\n")
    return path


def first_read(path: Path, tmp_path: Path) -> dict[str, str]:
    repo = Repository(name="r", url=str(path), scm_provider="local")
    scm = LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(tmp_path / "s")
    )
    try:
        opened = scm.open_pull_request(
            repo=repo, head="env-next", base="env", title="t", body="", labels=()
        )
        assert scm.find_open_pull_request(repo=repo, head="env-next", base="env") == opened
        return {b: git(path, "rev-parse", f"refs/heads/{b}").strip() for b in ("env", "env-next")}
    finally:
        scm.close()


def test_a_repository_with_many_loose_refs_has_them_packed_by_the_first_read(
    tmp_path: Path,
) -> None:
    path = with_branches(promotion_repository(tmp_path / "r.git"), LOOSE_REFS)
    before = git(path, "for-each-ref").splitlines()
    tips = first_read(path, tmp_path)
    assert loose_refs(path, at_least=1) == 0
    assert git(path, "for-each-ref").splitlines() == before  # the same refs, packed
    assert tips["env"] != tips["env-next"]
    assert git(path, "fsck", "--no-dangling").strip() == ""


def test_a_repository_with_few_loose_refs_is_left_as_it_is(tmp_path: Path) -> None:
    path = with_branches(promotion_repository(tmp_path / "r.git"), 10)
    first_read(path, tmp_path)
    assert loose_refs(path, at_least=1000) == 12
    assert not (path / "packed-refs").exists()


def test_another_users_repository_is_never_packed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = with_branches(promotion_repository(tmp_path / "r.git"), LOOSE_REFS)
    uid = os.geteuid() + 1
    monkeypatch.setattr("scm_plugins.local.housekeeping.os.geteuid", lambda: uid)
    first_read(path, tmp_path)
    assert loose_refs(path, at_least=1000) == LOOSE_REFS + 2


def test_refs_that_cannot_be_packed_leave_the_repository_readable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock held by a push: nothing packed, nothing broken, the reason logged."""
    caplog.set_level(logging.INFO, logger="promoter.scm.local")
    path = with_branches(promotion_repository(tmp_path / "r.git"), LOOSE_REFS)
    (path / "packed-refs.lock").write_text("")
    tips = first_read(path, tmp_path)
    assert tips["env"] == git(path, "rev-parse", "refs/heads/env").strip()
    assert loose_refs(path, at_least=1000) == LOOSE_REFS + 2
    assert "refs not packed" in caplog.text
