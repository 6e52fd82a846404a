"""The daemon's manual operations and freezes, asked for an environment by a last part
two branches share (``prod`` of ``team-a/prod`` and ``team-b/prod``), refuse it naming
both, and write nothing: neither environment is held, pinned, released or frozen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promoter.daemon import Runtime
from promoter.errors import AmbiguousName
from promoter.git import GitMirror
from promoter.state.ledger import GitLedger
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, TEAMS, GitOpsRepo, local_config, teams_strategy

TEAM_A, TEAM_B = TEAMS


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path, [*ENVIRONMENTS, *TEAMS])


@pytest.fixture
def runtime(gitops: GitOpsRepo, tmp_path: Path) -> Runtime:
    """A runtime that is never started: the test drives its operations."""
    config = local_config(gitops.path, tmp_path / "state", extra_strategy=teams_strategy())
    return Daemon(config).runtime


def stored(gitops: GitOpsRepo, root: Path, strategy: str, branch: str) -> Any:
    """The ledger of ``branch`` as a restarted promoter reads it from the remote."""
    mirror = GitMirror(name="gitops", url=str(gitops.path), root=root)
    mirror.refresh()
    return GitLedger().read(mirror, strategy, branch)


OPERATIONS: dict[str, Callable[[Runtime, str], object]] = {
    "hold": lambda r, env: r.operations.hold("teams", env, dry_sha=None, reason="bad build"),
    "pin": lambda r, env: r.operations.pin("teams", env, dry_sha="0" * 40, reason="stay"),
    "release": lambda r, env: r.operations.release(
        "teams", env, dry_sha=None, by="ada", revert_holds=True
    ),
    "revert": lambda r, env: r.operations.revert("teams", env, to=None),
    "promote": lambda r, env: r.operations.promote("teams", env, reason="hotfix"),
    "merge": lambda r, env: r.operations.merge("teams", env, by="ada"),
    "unpin": lambda r, env: r.operations.unpin("teams", env),
    "freeze": lambda r, env: r.freezes.freeze(
        strategy="teams", environment=env, reason="release week", by="ada"
    ),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_an_operation_on_a_shared_last_part_is_refused_naming_both_and_writes_nothing(
    gitops: GitOpsRepo, runtime: Runtime, tmp_path: Path, operation: str
) -> None:
    with pytest.raises(AmbiguousName) as refused:
        OPERATIONS[operation](runtime, "prod")
    assert refused.value.candidates == (TEAM_A, TEAM_B)
    runtime.ledger.flush_all()
    for branch in TEAMS:
        ledger = stored(gitops, tmp_path / "restarted", "teams", branch)
        written = (ledger.holds, ledger.pin, ledger.freeze, ledger.overrides, ledger.reverts)
        assert written == ((), None, None, (), ())


def test_the_whole_branch_is_held_and_frozen_and_nothing_else(
    gitops: GitOpsRepo, runtime: Runtime, tmp_path: Path
) -> None:
    held = runtime.operations.hold("teams", TEAM_B, dry_sha=None, reason="bad build")
    assert held.environments == (TEAM_B,)
    frozen = runtime.freezes.freeze(
        strategy="teams", environment=TEAM_B, reason="release week", by="ada"
    )
    assert frozen.scope == f"{TEAM_B} of teams"
    runtime.ledger.flush_all()
    a = stored(gitops, tmp_path / "restarted", "teams", TEAM_A)
    b = stored(gitops, tmp_path / "restarted", "teams", TEAM_B)
    assert (a.holds, a.freeze) == ((), None)
    assert [h.dry_sha for h in b.holds] == [gitops.tip("main")]
    assert b.freeze is not None and b.freeze.reason == "release week"
