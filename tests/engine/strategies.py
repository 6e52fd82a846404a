"""Readable snapshot builders and hypothesis strategies for the engine's tests.

Dry commits are positions on one linear history (``dry(0)`` is the oldest);
positions at or beyond ``UNKNOWN`` are SHAs the history does not contain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal

from hypothesis import strategies as st

from promoter.engine.core import pr_text
from promoter.engine.core.ledger_state import EnvLedger
from promoter.engine.core.snapshot import CommitState, EnvironmentSnapshot, HealthyRecord, Snapshot
from promoter.models import CommitStatus, DryCommit, Phase, PullRequest, PullRequestState

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
STATUS_URL = "https://promoter.example.invalid/strategies/demo"
UNKNOWN = 1000
KEYS = ("ci", "e2e", "health")

PrSpec = Literal["none", "current", "stale", "outdated", "closed", "draft"]
"""``current``: open on the proposed tip with the desired text; ``stale``: open on an
older head; ``outdated``: open on the tip with an old title and body."""


@cache
def sha_of(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def dry(position: int) -> str:
    """The dry commit at ``position`` on the history (or unknown to it, from ``UNKNOWN``)."""
    return sha_of("dry", position)


def hydrated(branch: str, position: int) -> str:
    return sha_of("hydrated", branch, position)


def short(position: int) -> str:
    return dry(position)[:7]


def status(key: str, phase: Phase | str, description: str = "") -> CommitStatus:
    return CommitStatus(key=key, phase=Phase(phase), description=description, updated_at=NOW)


def statuses(phases: Mapping[str, Phase | str]) -> tuple[CommitStatus, ...]:
    return tuple(status(key, phase) for key, phase in phases.items())


@dataclass(frozen=True)
class Env:
    """One environment, in the words of a test: dry positions instead of SHAs."""

    name: str
    active: int | None = 0
    proposed: int | None = 0
    same_tree: bool = False
    """The hydrator rendered the proposed commit exactly like the active one."""
    active_keys: tuple[str, ...] = ()
    proposed_keys: tuple[str, ...] = ()
    active_statuses: Mapping[str, Phase | str] = field(default_factory=dict)
    proposed_statuses: Mapping[str, Phase | str] = field(default_factory=dict)
    pr: PrSpec = "none"
    auto_merge: bool = True
    healthy: int | None = None
    """Dry position of the last healthy record (on this environment's active branch)."""
    error: str | None = None
    active_metadata_error: str | None = None
    proposed_metadata_error: str | None = None

    @property
    def branch(self) -> str:
        return f"environment/{self.name}"

    def snapshot(self, index: int) -> EnvironmentSnapshot:
        active = proposed = None
        if self.active is not None:
            active = CommitState(
                hydrated_sha=hydrated(self.branch, self.active),
                tree_sha=sha_of("tree", self.name, self.active),
                dry_sha=None if self.active_metadata_error else dry(self.active),
                metadata_error=self.active_metadata_error,
                statuses=statuses(self.active_statuses),
            )
        if self.proposed is not None:
            same = self.same_tree or self.proposed == self.active
            proposed = CommitState(
                hydrated_sha=hydrated(f"{self.branch}-next", self.proposed),
                tree_sha=sha_of("tree", self.name, self.active if same else self.proposed),
                dry_sha=None if self.proposed_metadata_error else dry(self.proposed),
                metadata_error=self.proposed_metadata_error,
                statuses=statuses(self.proposed_statuses),
            )
        last_healthy = None
        if self.healthy is not None:
            last_healthy = HealthyRecord(
                dry_sha=dry(self.healthy),
                hydrated_sha=hydrated(self.branch, self.healthy),
                healthy_since=NOW,
            )
        changelog: tuple[DryCommit, ...] = ()
        if self.active is not None and self.proposed is not None and self.proposed < UNKNOWN:
            changelog = tuple(
                DryCommit(sha=dry(p), subject=f"change {p}", author="Ada", url="")
                for p in range(self.proposed, self.active, -1)
            )
        return EnvironmentSnapshot(
            branch=self.branch,
            proposed_branch=f"{self.branch}-next",
            auto_merge=self.auto_merge,
            active_keys=self.active_keys,
            proposed_keys=self.proposed_keys,
            active=active,
            proposed=proposed,
            changelog=changelog,
            ledger=EnvLedger(healthy=(last_healthy,) if last_healthy else ()),
            error=self.error,
        )


def build(*envs: Env, history: int = 10) -> Snapshot:
    """A snapshot of ``envs`` in order, on a linear dry history of ``history`` commits."""
    ancestry = frozenset((dry(i), dry(j)) for i in range(history) for j in range(i + 1, history))
    snapshot = Snapshot(
        strategy="demo",
        repository="https://git.example.invalid/demo.git",
        dry_branch="main",
        environments=tuple(env.snapshot(index) for index, env in enumerate(envs)),
        ancestry=ancestry,
        status_url=STATUS_URL,
        now=NOW,
    )
    environments = tuple(_with_pull_request(snapshot, index, env) for index, env in enumerate(envs))
    return snapshot.model_copy(update={"environments": environments})


def _with_pull_request(snapshot: Snapshot, index: int, spec: Env) -> EnvironmentSnapshot:
    env = snapshot.environments[index]
    if spec.pr == "none" or env.proposed is None:
        return env
    proposed_sha = env.proposed.dry_sha or dry(UNKNOWN - 1)
    active_sha = env.active.dry_sha if env.active and env.active.dry_sha else dry(UNKNOWN - 1)
    text = pr_text.for_environment(snapshot, index, dry_sha=proposed_sha, active_dry_sha=active_sha)
    head = env.proposed.hydrated_sha
    title, body = text.title, text.body
    if spec.pr == "stale":
        head = sha_of("stale head", env.branch)
    if spec.pr == "outdated":
        title, body = "Promote something old", "An old body."
    pr = PullRequest(
        id=f"pr-{index}",
        number=index + 10,
        head_branch=env.proposed_branch,
        base_branch=env.branch,
        head_sha=head,
        state=PullRequestState.CLOSED if spec.pr == "closed" else PullRequestState.OPEN,
        title=title,
        body=body,
        labels=text.labels,
        draft=spec.pr == "draft",
    )
    return env.model_copy(update={"pull_request": pr})


def pull_request(snapshot: Snapshot, index: int) -> PullRequest:
    pr = snapshot.environments[index].pull_request
    assert pr is not None
    return pr


# --- hypothesis -----------------------------------------------------------------------

NAMES = ("dev", "staging", "prod", "dr")
_phases = st.sampled_from(["success"] * 3 + ["pending", "failure", "failure", None])
_keys = st.lists(st.sampled_from(KEYS), max_size=2, unique=True).map(tuple)
_rare = st.integers(0, 29).map(lambda n: "unreadable" if n == 29 else None)
_prs: st.SearchStrategy[PrSpec] = st.sampled_from(
    ["current", "current", "current", "stale", "stale", "none", "outdated", "closed", "draft"]
)


def _phase_map(draw: st.DrawFn) -> dict[str, Phase | str]:
    """Every key success half of the time (so that merges are common), else anything."""
    if draw(st.booleans()):
        return dict.fromkeys(KEYS, "success")
    drawn = {key: draw(_phases) for key in KEYS}
    return {key: phase for key, phase in drawn.items() if phase is not None}


def _active(draw: st.DrawFn, history: int) -> int | None:
    """Mostly a commit of the history, rarely one unknown to it, or no branch at all."""
    kind = draw(st.integers(0, 19))
    if kind == 19:
        return None
    if kind == 18:
        return UNKNOWN + draw(st.integers(0, 1))
    return draw(st.integers(0, history - 1))


def _proposed(draw: st.DrawFn, history: int, head: int, active: int | None) -> int | None:
    """Mostly the head of the dry branch (a hydrator renders every environment for
    it), else the active commit, one near it, anything, unknown, or no branch."""
    kind = draw(st.integers(0, 19))
    if kind == 19:
        return None
    if kind == 18:
        return UNKNOWN + draw(st.integers(0, 1))
    if kind < 3 or active is None or active >= UNKNOWN:
        return draw(st.integers(0, history - 1))
    if kind < 6:
        return active
    if kind < 9:
        return active + draw(st.integers(1, 2))
    return head


@st.composite
def envs(draw: st.DrawFn, name: str, history: int, head: int, active: int | None) -> Env:
    """One random environment on ``active``, proposing mostly ``head``."""
    return Env(
        name=name,
        active=active,
        proposed=_proposed(draw, history, head, active),
        same_tree=draw(st.integers(0, 3)) == 3,
        active_keys=draw(_keys),
        proposed_keys=draw(_keys),
        active_statuses=_phase_map(draw),
        proposed_statuses=_phase_map(draw),
        pr=draw(_prs),
        auto_merge=draw(st.integers(0, 3)) != 3,
        healthy=draw(st.one_of(st.none(), st.integers(0, history - 1))),
        error=draw(_rare),
        active_metadata_error=draw(_rare),
        proposed_metadata_error=draw(_rare),
    )


@st.composite
def snapshots(draw: st.DrawFn, ordered: bool = False, focus: bool = False) -> Snapshot:
    """Random strategies, mostly with each environment behind the previous one.

    ``ordered`` always keeps every active at or behind the previous one's, and
    every environment readable. ``focus`` makes the last environment (of at least
    two) mergeable but for the previous environment, so rule 4 is what decides.
    """
    history = draw(st.integers(2, 8))  # actives; proposals reach 3 commits further
    head = history - 1 + draw(st.integers(0, 3))
    count = draw(st.integers(2 if focus else 1, len(NAMES)))
    if ordered:
        drawn = draw(st.lists(st.integers(0, history - 1), min_size=count, max_size=count))
        actives: list[int | None] = [*sorted(drawn, reverse=True)]
    else:
        actives = [_active(draw, history) for _ in range(count)]
        if draw(st.integers(0, 3)) != 0:  # sort the known positions, leave the rest in place
            slots = [i for i, p in enumerate(actives) if p is not None and p < UNKNOWN]
            known = sorted((actives[i] or 0 for i in slots), reverse=True)
            for slot, position in zip(slots, known, strict=True):
                actives[slot] = position
    specs = [draw(envs(NAMES[i], history, head, actives[i])) for i in range(count)]
    if ordered:
        specs = [
            replace(spec, error=None, active_metadata_error=None, proposed_metadata_error=None)
            for spec in specs
        ]
    if focus:
        specs[-2] = replace(specs[-2], active_keys=specs[-2].active_keys or ("health",))
        specs[-1] = _mergeable(draw, specs[-1], specs[-2])
    return build(*specs, history=history + 3)


def _mergeable(draw: st.DrawFn, env: Env, previous: Env) -> Env:
    """``env`` with green gates and an open PR on its tip, promoting a commit near the
    one ``previous`` runs (when known) from an active one to two commits behind."""
    proposed = env.proposed
    if previous.active is not None and previous.active < UNKNOWN:
        proposed = max(2, previous.active + draw(st.integers(-1, 1)))
    active = env.active
    if proposed is not None and proposed < UNKNOWN:
        active = proposed - draw(st.integers(1, 2))
    return replace(
        env,
        active=active,
        proposed=proposed,
        same_tree=False,
        proposed_statuses=dict.fromkeys(KEYS, "success"),
        pr="current",
        auto_merge=True,
        error=None,
        active_metadata_error=None,
        proposed_metadata_error=None,
    )


def dev_then_prod(**prod: Any) -> Snapshot:
    """dev runs 3 healthy; prod on 1 with 3 proposed, ci green, its PR open; ``prod``
    changes prod's environment snapshot (gates, ledger, rollout, ...)."""
    snapshot = build(
        Env(
            "dev",
            active=3,
            proposed=3,
            active_keys=("health",),
            active_statuses={"health": "success"},
        ),
        Env(
            "prod",
            active=1,
            proposed=3,
            proposed_keys=("ci",),
            proposed_statuses={"ci": "success"},
            pr="current",
        ),
    )
    envs = list(snapshot.environments)
    envs[1] = envs[1].model_copy(update=prod)
    return snapshot.model_copy(update={"environments": tuple(envs)})
