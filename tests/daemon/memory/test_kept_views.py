"""What the daemon keeps of a reconcile is a small summary built from its snapshot and
decision: no model of the snapshot or the decision themselves, the leaves it shows shared
with them, and no module of the promoter writing a library's private attribute."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import promoter
from promoter.daemon.loop.reconciler import failed_view
from promoter.daemon.memory.kept import kept_decision, kept_snapshot
from promoter.engine import (
    CommitState,
    Decision,
    EnvironmentSnapshot,
    EnvironmentVerdict,
    EnvState,
    FreezePeriod,
    GateVerdict,
    RecordHealthy,
    Snapshot,
)
from promoter.models import CommitStatus, Phase
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SHA = "a" * 40


def snapshot() -> Snapshot:
    status = CommitStatus(key="health", phase=Phase.SUCCESS)
    env = EnvironmentSnapshot(
        branch="env/dev",
        proposed_branch="env/dev-next",
        auto_merge=True,
        active_keys=("health",),
        active=CommitState(
            hydrated_sha=SHA, tree_sha="t" * 40, dry_sha="d" * 40, statuses=(status,)
        ),
        freezes=(FreezePeriod(reason="release", scope="strategy app"),),
    )
    return Snapshot(
        strategy="app",
        repository="repo",
        dry_branch="main",
        environments=(env,),
        labels=("promoter",),
        now=NOW,
    )


def decision() -> Decision:
    gate = GateVerdict(name="health", phase=Phase.SUCCESS, reason="green")
    verdict = EnvironmentVerdict(
        branch="env/dev", state=EnvState.UP_TO_DATE, reason="", gates=(gate,)
    )
    record = RecordHealthy(environment=0, dry_sha="d" * 40, hydrated_sha=SHA, since=NOW)
    return Decision(actions=(record,), environments=(verdict,))


def reachable(*roots: Any) -> list[Any]:
    """Every object reachable from ``roots`` (classes and modules left out)."""
    seen: set[int] = set()
    found: list[Any] = []
    stack = list(roots)
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        found.append(item)
        stack.extend(gc.get_referents(item))
    return found


def test_the_summary_keeps_what_is_shown_and_shares_the_leaves_it_shows() -> None:
    read, decided = snapshot(), decision()
    kept, shown = kept_snapshot(read), kept_decision(decided)
    [env], [source] = kept.environments, read.environments
    assert (kept.strategy, kept.repository, kept.labels) == ("app", "repo", ("promoter",))
    assert env.branch == "env/dev" and env.active is not None and env.proposed is None
    assert (env.active.hydrated_sha, env.active.dry_sha) == (SHA, "d" * 40)
    assert env.active.status("health") is source.active.statuses[0]  # type: ignore[union-attr]
    assert env.ledger is source.ledger and env.freezes is source.freezes
    assert env.last_healthy is None
    [verdict] = shown.environments
    assert (verdict.branch, verdict.state, verdict.gates) == (
        "env/dev",
        EnvState.UP_TO_DATE,
        decided.environments[0].gates,
    )
    assert shown.actions == ("healthy",)


def test_the_summary_holds_no_model_of_the_snapshot_or_the_decision() -> None:
    kept = (kept_snapshot(snapshot()), kept_decision(decision()))
    models = {type(o).__name__ for o in reachable(*kept) if isinstance(o, BaseModel)}
    assert models == {"CommitStatus", "EnvLedger", "FreezePeriod", "GateVerdict"}


def test_a_failed_reconcile_shows_its_error_on_the_summary_it_kept_before() -> None:
    before = failed_view(None, snapshot(), decision(), "boom", None)
    after = failed_view(before, None, None, "the SCM answered 502", "env/dev", outage=True)
    assert after.snapshot is before.snapshot
    assert after.decision is not None
    [verdict] = after.decision.environments
    assert (verdict.state, verdict.reason) == (EnvState.BLOCKED, "the SCM answered 502")


def test_the_views_a_daemon_keeps_hold_no_snapshot_decision_or_pydantic_field_set(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    runtime = daemon.runtime
    runtime.start()
    try:
        wait_for(lambda: runtime.queue.finished > 0 and runtime.queue.idle(), timeout=30)
        views = runtime.reconciler.all_views()
    finally:
        runtime.stop()
    assert views and all(v.snapshot is not None for v in views.values())
    found = reachable(*views.values())
    kinds = {type(o) for o in found}
    assert not kinds & {Snapshot, EnvironmentSnapshot, Decision, CommitState, EnvironmentVerdict}
    names = {type(o).__name__ for o in found}
    assert {"KeptSnapshot", "KeptEnvironment", "KeptCommit", "KeptVerdict"} <= names


def test_no_module_of_the_promoter_writes_a_private_attribute_of_pydantic() -> None:
    root = Path(promoter.__file__).parent
    writers = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "__pydantic_" in path.read_text(encoding="utf-8")
    ]
    assert writers == []
