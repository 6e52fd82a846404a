"""JSON views of strategies for the API and the status table (camelCase, like the CRDs)."""

from __future__ import annotations

from typing import Any

from promoter.config import PromotionStrategy
from promoter.daemon import KeptCommit, KeptEnvironment, KeptSnapshot, KeptVerdict, StrategyView
from promoter.engine import FreezePeriod, Revert


def _commit(commit: KeptCommit | None) -> dict[str, Any] | None:
    if commit is None:
        return None
    return {
        "hydratedSha": commit.hydrated_sha,
        "drySha": commit.dry_sha,
        "metadataError": commit.metadata_error,
        "commitStatuses": [s.model_dump(mode="json", by_alias=True) for s in commit.statuses],
    }


def _healthy(env: KeptEnvironment) -> dict[str, str] | None:
    record = env.last_healthy
    if record is None:
        return None
    return {
        "drySha": record.dry_sha,
        "hydratedSha": record.hydrated_sha,
        "healthySince": record.healthy_since.isoformat(),
    }


def _revert(revert: Revert, env: KeptEnvironment) -> dict[str, Any]:
    pr = env.revert_pull_request
    in_flight = pr is not None and pr.number == revert.pr
    return {
        "badDrySha": revert.bad_dry_sha,
        "restoredDrySha": revert.restored_dry_sha,
        "reason": revert.reason,
        "trigger": revert.trigger,
        "openedAt": revert.opened_at.isoformat(),
        "pr": revert.pr,
        "branch": revert.branch,
        "inFlight": in_flight,
    }


def _pin(env: KeptEnvironment) -> dict[str, str] | None:
    pin = env.ledger.pin
    if pin is None:
        return None
    return {"drySha": pin.dry_sha, "reason": pin.reason, "since": pin.since.isoformat()}


def _not_kept(snapshot: KeptSnapshot, env: KeptEnvironment) -> list[str]:
    """The strategy's labels the SCM did not keep on this environment's open PR lately."""
    pr = env.pull_request
    if pr is None:
        return []
    return [n for n in snapshot.labels if n in snapshot.unheld_labels and n not in pr.labels]


def _environment(
    env: KeptEnvironment, verdict: KeptVerdict | None, not_kept: list[str]
) -> dict[str, Any]:
    pr = env.pull_request
    return {
        "branch": env.branch,
        "proposedBranch": env.proposed_branch,
        "autoMerge": env.auto_merge,
        "state": verdict.state.value if verdict else "unknown",
        "reason": verdict.reason if verdict else "",
        "gates": [
            {
                "name": g.name,
                "phase": g.phase.value,
                "reason": g.reason,
                "changesAt": g.changes_at.isoformat() if g.changes_at else None,
            }
            for g in (verdict.gates if verdict else ())
        ],
        "active": _commit(env.active),
        "proposed": _commit(env.proposed),
        "pullRequest": pr.model_dump(mode="json", by_alias=True) if pr else None,
        "labelsNotKept": not_kept,
        "lastHealthy": _healthy(env),
        "holds": [
            {
                "drySha": h.dry_sha,
                "reason": h.reason,
                "since": h.since.isoformat(),
                "source": h.source,
            }
            for h in env.ledger.holds
        ],
        "reverts": [_revert(r, env) for r in env.ledger.reverts[-5:]],
        "paused": env.ledger.paused,
        "pin": _pin(env),
        "overrides": [o.model_dump(mode="json") for o in env.ledger.overrides[-5:]],
        "freezes": [_freeze(f) for f in env.freezes],
        "mergeQueue": _queue(env),
        "queueRaces": [
            {"pr": r.number, "drySha": r.dry_sha, "reason": r.reason, "at": r.at.isoformat()}
            for r in env.ledger.queue_races[-5:]
        ],
        "error": env.error,
    }


def _queue(env: KeptEnvironment) -> dict[str, Any] | None:
    """The promotion PR's latest merge-queue attempt: in the queue, taken out (by the queue,
    or by the promoter: ``withdrawn``), or merged."""
    attempt = env.ledger.queue
    if attempt is None:
        return None
    return {
        "pr": attempt.number,
        "headSha": attempt.head_sha,
        "attempts": attempt.attempts,
        "enqueuedAt": attempt.enqueued_at.isoformat(),
        "dequeuedAt": attempt.dequeued_at.isoformat() if attempt.dequeued_at else None,
        "reason": attempt.reason,
        "withdrawn": attempt.withdrawn,
        "mergedAt": attempt.merged_at.isoformat() if attempt.merged_at else None,
    }


def _freeze(period: FreezePeriod) -> dict[str, Any]:
    """A freeze covering the environment: its scope, why, who, from when, until when."""
    return {
        "scope": period.scope,
        "reason": period.reason,
        "by": period.by or None,
        "start": period.start.isoformat() if period.start else None,
        "end": period.end.isoformat() if period.end else None,
        "timeZone": period.time_zone,
    }


def strategy_json(
    strategy: PromotionStrategy, view: StrategyView | None, *, owner: str | None = None
) -> dict[str, Any]:
    """One strategy's detail: each environment's SHAs, statuses, PR and gate verdicts;
    ``owner``: the replica that works on it (Kubernetes mode, sharded)."""
    out: dict[str, Any] = {
        "name": strategy.name,
        "repository": strategy.repository,
        **({"owner": owner} if owner is not None else {}),
        "dryBranch": strategy.dry_branch,
        "reconciledAt": view.reconciled_at.isoformat() if view and view.reconciled_at else None,
        "error": view.error if view else None,
        "waiting": view.waiting if view else None,
        "rollout": rollout_json(strategy),
        "environments": [],
    }
    if view is None or view.snapshot is None:
        state, reason = ("unknown", "")
        if view and view.error:
            state, reason = view.failure() if view.outage else ("error", view.error)
        reason = reason or (view.waiting if view else None) or "not reconciled yet"
        out["environments"] = [
            {"branch": e.branch, "state": state, "reason": reason} for e in strategy.environments
        ]
        return out
    verdicts = {v.branch: v for v in view.decision.environments} if view.decision else {}
    snapshot = view.snapshot
    out["environments"] = [
        _environment(env, verdicts.get(env.branch), _not_kept(snapshot, env))
        for env in snapshot.environments
    ]
    if view.error:  # the last reconcile failed: what is shown is older than the failure
        for env in out["environments"]:
            env["state"], env["reason"] = view.failure()
    return out


def strategy_summary(
    strategy: PromotionStrategy, view: StrategyView | None, *, owner: str | None = None
) -> dict[str, Any]:
    detail = strategy_json(strategy, view, owner=owner)
    return {
        "name": detail["name"],
        "repository": detail["repository"],
        **({"owner": owner} if owner is not None else {}),
        "error": detail["error"],
        "waiting": detail["waiting"],
        "environments": [
            {
                "branch": e["branch"],
                "state": e["state"],
                "reason": e["reason"],
                "activeDrySha": (e.get("active") or {}).get("drySha"),
                "proposedDrySha": (e.get("proposed") or {}).get("drySha"),
            }
            for e in detail["environments"]
        ],
    }


def rollout_json(strategy: PromotionStrategy) -> dict[str, Any] | None:
    """The shape of the rollout when it is not a line: tiers, or what each environment
    depends on."""
    if strategy.tiers:
        return {
            "tiers": [
                {
                    "name": t.name,
                    "environments": list(t.environments),
                    "require": t.required(),
                    "maxParallel": t.max_parallel,
                    "noticeLead": t.notice.lead if t.notice else None,
                }
                for t in strategy.tiers
            ]
        }
    if any(e.depends_on is not None for e in strategy.environments):
        return {
            "dependsOn": {
                branch: [list(g.branches) for g in groups]
                for branch, groups in strategy.upstreams().items()
            }
        }
    return None
