"""What the notifications read from the strategies' views rather than from the executor:
a gate that failed (``gate.failed``, once per gate and commit) and an environment held
up (``promotion.blocked``).

An environment is held up when the one before it (every group it ``dependsOn``) runs
the dry commit it proposes and it still does not: its clock starts at that moment, not
when its PR was opened, so prod waiting for staging is no blocked prod. It is told once
per environment and dry commit, with the environment's reason, after ``blockedAfter``.
What was told is remembered while the daemon runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from promoter.daemon import StrategyView

MOVING = ("up-to-date", "promoting")
"""States in which an environment is not held up."""
REMEMBERED = 10_000
"""Failures told, kept to tell each once; the oldest are forgotten past this."""


@dataclass(frozen=True)
class Finding:
    """Something to tell: ``event`` is ``gate.failed`` or ``promotion.blocked``."""

    event: str
    strategy: str
    environment: str
    message: str
    dry_sha: str
    hydrated_sha: str
    pr: int | None
    pr_url: str


@dataclass
class Watch:
    """Compares each scan of the views with what it saw before."""

    blocked_after: float
    told: dict[tuple[str, ...], None] = field(default_factory=dict)
    ready_since: dict[tuple[str, str, str], float] = field(default_factory=dict)

    def scan(self, views: Mapping[str, StrategyView], now: float) -> list[Finding]:
        found: list[Finding] = []
        waiting: dict[tuple[str, str, str], float] = {}
        for name, view in views.items():
            if view.snapshot is None or view.decision is None or view.error:
                continue
            for env, verdict, i in _environments(view):
                found.extend(self._gates(name, env, verdict))
                held = self._held_up(name, view, env, verdict, i, now, waiting)
                if held is not None:
                    found.append(held)
        self.ready_since = waiting
        while len(self.told) > REMEMBERED:
            del self.told[next(iter(self.told))]
        return found

    def _gates(self, name: str, env: Any, verdict: Any) -> Iterator[Finding]:
        for gate in verdict.gates:
            if gate.phase.value != "failure":
                continue
            commit = env.active if gate.name in env.active_keys else env.proposed or env.active
            hydrated = commit.hydrated_sha if commit is not None else ""
            key = ("gate", name, env.branch, gate.name, hydrated)
            if key in self.told:
                continue
            self.told[key] = None
            pr = env.pull_request
            status = commit.status(gate.name) if commit is not None else None
            words = status.description if status is not None else ""
            said = f" ({words})" if words and words not in gate.reason else ""
            yield Finding(
                "gate.failed",
                name,
                env.branch,
                f"{gate.name} failed: {gate.reason}{said}",
                (commit.dry_sha or "") if commit is not None else "",
                hydrated,
                pr.number if pr is not None else None,
                pr.url if pr is not None else "",
            )

    def _held_up(
        self,
        name: str,
        view: StrategyView,
        env: Any,
        verdict: Any,
        index: int,
        now: float,
        waiting: dict[tuple[str, str, str], float],
    ) -> Finding | None:
        proposed = env.proposed.dry_sha if env.proposed is not None else None
        active = env.active.dry_sha if env.active is not None else None
        if not proposed or proposed == active or verdict.state.value in MOVING:
            return None
        if not _upstream_runs(view, index, proposed):
            return None
        key = (name, env.branch, proposed)
        since = self.ready_since.get(key, now)
        waiting[key] = since
        if now - since < self.blocked_after or ("blocked", *key) in self.told:
            return None
        self.told[("blocked", *key)] = None
        pr = env.pull_request
        return Finding(
            "promotion.blocked",
            name,
            env.branch,
            f"held up for {int(now - since)}s after the environment before it was ready: "
            f"{verdict.reason}",
            proposed,
            env.proposed.hydrated_sha,
            pr.number if pr is not None else None,
            pr.url if pr is not None else "",
        )


def _environments(view: StrategyView) -> Iterator[tuple[Any, Any, int]]:
    assert view.snapshot is not None and view.decision is not None
    verdicts = {v.branch: v for v in view.decision.environments}
    for i, env in enumerate(view.snapshot.environments):
        verdict = verdicts.get(env.branch)
        if verdict is not None:
            yield env, verdict, i


def _upstream_runs(view: StrategyView, index: int, dry_sha: str) -> bool:
    """Whether what environment ``index`` waits for runs ``dry_sha`` (the first one waits
    for nothing: its proposed commit is ready once it exists)."""
    assert view.snapshot is not None
    envs = view.snapshot.environments
    groups = envs[index].upstreams
    pairs: list[tuple[tuple[int, ...], int]]
    if groups is None:
        pairs = [((index - 1,), 1)] if index > 0 else []
    else:
        pairs = [(g.indices, g.require) for g in groups]
    for indices, require in pairs:
        runs = [envs[i].active for i in indices]
        if sum(1 for a in runs if a is not None and a.dry_sha == dry_sha) < require:
            return False
    return True
