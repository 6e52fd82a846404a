"""The ledger is exact: a revert and its holds land together, an unreadable note blocks
its environment and is never overwritten, a refused break-glass merge is not recorded."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.sandbox import git
from promoter.daemon import Runtime
from promoter.engine import HealthyRecord
from promoter.errors import GitError, PromoterError
from promoter.git import GitMirror
from promoter.state.ledger import LEDGER_REF, GitLedger, key_object
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV, STAGING, PROD = ENVIRONMENTS
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def runtime(gitops: GitOpsRepo, tmp_path: Path) -> Runtime:
    """A runtime that is never started: the test drives its reconciles and operations."""
    return Daemon(local_config(gitops.path, tmp_path / "state")).runtime


def stored(gitops: GitOpsRepo, root: Path, branch: str) -> Any:
    """The ledger of ``branch`` as a restarted promoter reads it from the remote."""
    mirror = GitMirror(name="gitops", url=str(gitops.path), root=root)
    mirror.refresh()
    return GitLedger().read(mirror, "guestbook", branch)


def test_a_kill_between_the_ledger_writes_of_a_revert_leaves_no_revert_without_its_holds(
    gitops: GitOpsRepo, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = runtime.config.repository("gitops")
    mirror = runtime.mirrors.fresh(repo)
    first = git(gitops.path, "rev-parse", "main")
    healthy = HealthyRecord(dry_sha=first, hydrated_sha=gitops.tip(DEV), healthy_since=NOW)
    runtime.ledger.update(mirror, "guestbook", DEV, lambda led: led.with_healthy(healthy))
    bad = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    git(gitops.path, "update-ref", f"refs/heads/{DEV}", gitops.tip(f"{DEV}-next"))
    runtime.mirrors.invalidate("gitops")

    pushes: list[list[str]] = []
    real_push = GitMirror.push_commit

    def killed_at_the_second_ledger_push(
        self: GitMirror, ref: str, sha: str, *, lease: str | None
    ) -> None:
        if ref == LEDGER_REF:
            pushes.append([f"{sha}:{ref}"])
            if len(pushes) == 2:
                raise GitError("the promoter was killed here")
        real_push(self, ref, sha, lease=lease)

    monkeypatch.setattr(GitMirror, "push_commit", killed_at_the_second_ledger_push)
    with contextlib.suppress(PromoterError):  # killed: a restarted promoter reads the remote
        runtime.operations.revert("guestbook", DEV, to=None)
    root = tmp_path / "restarted"
    reverts = stored(gitops, root / "a", DEV).reverts
    holds = {b: [h.dry_sha for h in stored(gitops, root / b, b).holds] for b in ENVIRONMENTS}
    assert [r.bad_dry_sha for r in reverts] == [bad]
    assert holds == {branch: [bad] for branch in ENVIRONMENTS}
    assert len(pushes) == 1  # the revert and its three holds: one push


def break_note(gitops: GitOpsRepo, branch: str) -> str:
    """Replace the ledger note of ``branch`` on the remote with text that is not JSON."""
    data, sha = key_object("guestbook", branch)
    blob = git(gitops.path, "hash-object", "-w", "--stdin", stdin=data.decode())
    assert blob == sha
    git(gitops.path, "notes", f"--ref={LEDGER_REF}", "add", "-f", "-m", "{not json", sha)
    return sha


def test_an_unreadable_ledger_note_blocks_its_environment_and_is_never_overwritten(
    gitops: GitOpsRepo, runtime: Runtime
) -> None:
    key = break_note(gitops, PROD)
    runtime.reconciler.reconcile("guestbook")
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.decision is not None
    prod = next(v for v in view.decision.environments if v.branch == PROD)
    assert prod.state.value == "error"
    assert "ledger of environment/prod cannot be read" in prod.reason
    with pytest.raises(PromoterError):
        runtime.operations.hold("guestbook", DEV, dry_sha=None, reason="bad build")
    runtime.ledger.flush_all()
    note = git(gitops.path, "notes", f"--ref={LEDGER_REF}", "show", key)
    assert note == "{not json"


def test_a_refused_break_glass_merge_is_not_recorded_as_a_promotion(
    gitops: GitOpsRepo, runtime: Runtime, tmp_path: Path
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")  # opens dev's promotion PR; ci is pending
    plugin: Any = runtime.plugins["local"]
    comment = plugin.comment_pull_request

    def hydrator_pushes_meanwhile(**kw: Any) -> None:
        comment(**kw)
        gitops.change("1.2.0", "Bump guestbook to 1.2.0")

    plugin.comment_pull_request = hydrator_pushes_meanwhile
    before = gitops.tip(DEV)
    with pytest.raises(PromoterError):
        runtime.operations.promote("guestbook", DEV, reason="hotfix")
    assert gitops.tip(DEV) == before
    assert stored(gitops, tmp_path / "restarted", DEV).overrides == ()
