"""The ``status`` of custom resources, computed from what the reconciler saw (pure functions).

The result holds nothing that changes on an idle resync (no reconcile time, and a
condition's ``lastTransitionTime`` moves only when its status or reason does), so
comparing it with what the object has tells whether a write is needed at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from promoter.daemon import KeptCommit, KeptEnvironment, StrategyView
from promoter.kube.resources.specs import (
    CommitState,
    Condition,
    EnvironmentStatus,
    GateStatus,
    HealthyDrySha,
    PromotionStrategyStatus,
    PullRequestRef,
)
from promoter.models import Phase, utcnow

Obj = dict[str, Any]


def condition(
    old: Obj | None, *, ok: bool, reason: str, message: str, generation: int | None
) -> Condition:
    """The Ready condition; keeps the old transition time while status and reason hold."""
    status = "True" if ok else "False"
    since = utcnow().replace(microsecond=0)
    old_ready = next(
        (c for c in (old or {}).get("conditions") or [] if c.get("type") == "Ready"), None
    )
    if old_ready and old_ready.get("status") == status and old_ready.get("reason") == reason:
        since = datetime.fromisoformat(str(old_ready["lastTransitionTime"]).replace("Z", "+00:00"))
    return Condition(
        type="Ready",
        status=status,
        reason=reason,
        message=message[:1024],
        lastTransitionTime=since,
        observedGeneration=generation,
    )


def _gates(commit: KeptCommit | None, keys: tuple[str, ...]) -> GateStatus | None:
    if commit is None:
        return None
    phases = [(commit.status(k).phase if commit.status(k) else Phase.PENDING) for k in keys]  # type: ignore[union-attr]
    passed = sum(p is Phase.SUCCESS for p in phases)
    if Phase.FAILURE in phases:
        phase = Phase.FAILURE
    elif passed == len(phases):
        phase = Phase.SUCCESS
    else:
        phase = Phase.PENDING
    return GateStatus(phase=phase, description=f"{passed}/{len(phases)} gates success")


def _commit(commit: KeptCommit | None, keys: tuple[str, ...]) -> CommitState:
    if commit is None:
        return CommitState()
    return CommitState(
        drySha=commit.dry_sha, hydratedSha=commit.hydrated_sha, commitStatus=_gates(commit, keys)
    )


def _environment(env: KeptEnvironment, state: str, reason: str) -> EnvironmentStatus:
    pr = env.pull_request
    return EnvironmentStatus(
        branch=env.branch,
        state=state,
        reason=reason,
        active=_commit(env.active, env.active_keys),
        proposed=_commit(env.proposed, env.proposed_keys),
        pullRequest=PullRequestRef(number=pr.number, url=pr.url, state=pr.state.value)
        if pr
        else None,
        lastHealthyDryShas=[
            HealthyDrySha(sha=r.dry_sha, time=r.healthy_since) for r in env.ledger.healthy[-5:]
        ][::-1],
        holds=[h.dry_sha for h in env.ledger.holds],
    )


def strategy_status(obj: Obj, view: StrategyView | None, problem: str | None) -> Obj:
    """The PromotionStrategy status for an object, the last reconcile, and a spec problem."""
    generation = obj.get("metadata", {}).get("generation")
    old = obj.get("status") or {}
    if problem is not None:
        ready = condition(
            old, ok=False, reason="InvalidSpec", message=problem, generation=generation
        )
        status = PromotionStrategyStatus(observedGeneration=generation, conditions=[ready])
        return status.model_dump(mode="json", by_alias=True, exclude_none=True)
    environments = list(old.get("environments") or [])
    if view is not None and view.snapshot is not None and view.decision is not None:
        verdicts = {v.branch: v for v in view.decision.environments}
        environments = [
            _environment(
                env,
                verdicts[env.branch].state.value if env.branch in verdicts else "unknown",
                verdicts[env.branch].reason if env.branch in verdicts else "",
            ).model_dump(mode="json", by_alias=True, exclude_none=True)
            for env in view.snapshot.environments
        ]
    if view is None:
        ready = condition(
            old, ok=False, reason="Pending", message="not reconciled yet", generation=generation
        )
    elif view.error:
        ready = condition(
            old, ok=False, reason="ReconcileFailed", message=view.error, generation=generation
        )
    else:
        ready = condition(old, ok=True, reason="Reconciled", message="", generation=generation)
    conditions = [ready.model_dump(mode="json", by_alias=True, exclude_none=True)]
    return {
        "observedGeneration": generation,
        "conditions": conditions,
        "environments": environments,
    }


def ready_status(
    obj: Obj, problem: str | None, *, extra: Obj | None = None, reason: str = "InvalidSpec"
) -> Obj:
    """The status of a GitRepository, ScmProvider or CommitStatus: a Ready condition
    (``reason`` says why it is not ready)."""
    generation = obj.get("metadata", {}).get("generation")
    old = obj.get("status") or {}
    if problem is None:
        ready = condition(old, ok=True, reason="Valid", message="", generation=generation)
    else:
        ready = condition(old, ok=False, reason=reason, message=problem, generation=generation)
    return {
        "observedGeneration": generation,
        "conditions": [ready.model_dump(mode="json", by_alias=True, exclude_none=True)],
        **(extra or {}),
    }


def quiet(obj: Obj) -> bool:
    """Whether a PromotionStrategy's status says it is at rest: its spec observed, Ready,
    every environment up to date (a replica taking it over may read it later)."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    envs = status.get("environments") or []
    return (
        ready
        and status.get("observedGeneration") == meta.get("generation")
        and bool(envs)
        and all(e.get("state") == "up-to-date" for e in envs)
    )


def same(old: Obj | None, new: Obj) -> bool:
    """True when writing ``new`` over ``old`` would change nothing."""
    return bool(_normal(old or {}) == _normal(new))


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value
