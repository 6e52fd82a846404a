"""The invariants the model holds the daemon to after every step (DESIGN.md §5, "Invariants
across features"), each a function that returns the problems it finds, in words.

A *merge* is a pull request the local SCM records merged during a phase of a step, with
who made it: a person (a step of the model), the queue (CI's report on a merge group) or
the promoter (a reconcile). What the promoter and its queue merge is held to the rules;
a person's merge is theirs, and counts only towards "one merge per change".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from promoter.engine import FREEZE_KEY, HOLD_KEY
from promoter.models import Phase

from .world import ENVIRONMENTS, STAGING, STRATEGY, Facts, World

PIN_KEY = "promoter/pin"
RULE_KEYS = (HOLD_KEY, PIN_KEY, FREEZE_KEY)
"""The checks the promoter writes as soon as their rule applies (engine ``publish``)."""
MAX_DESCRIPTION = 140


@dataclass(frozen=True)
class Merge:
    number: int
    branch: str
    dry: str
    head: str
    revert: bool
    actor: str


@dataclass
class History:
    """What the invariants remember across steps."""

    frozen: set[str] = field(default_factory=set)
    """The model's freezes in force: ``everything``, ``strategy`` or an environment branch."""
    merges: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    """Merges of each (environment, dry commit) since the environment's last revert."""
    prs: dict[tuple[str, str], set[int]] = field(default_factory=lambda: defaultdict(set))
    """Promotion PRs open for each (environment, dry commit) since its last revert."""
    revert_tips: set[str] = field(default_factory=set)
    """Active commits a revert PR's merge made."""

    def covers(self, branch: str) -> bool:
        return bool({"everything", "strategy", branch} & self.frozen)


def merges(world: World, before: Facts, after: Facts, actor: str) -> list[Merge]:
    """The pull requests merged between ``before`` and ``after``."""
    found = []
    for number, pr in after.pulls.items():
        was = before.pulls.get(number)
        if pr.state.value != "merged" or (was is not None and was.state.value == "merged"):
            continue
        revert = "revert" in pr.labels
        found.append(
            Merge(number, pr.base_branch, world.dry_of(pr.head_sha), pr.head_sha, revert, actor)
        )
    return found


def stop(history: History, facts: Facts, merge: Merge) -> str | None:
    """Why ``merge`` must not happen as things stand in ``facts``: a freeze, a hold, a pin."""
    ledger = facts.ledgers[merge.branch]
    if history.covers(merge.branch):
        return "frozen"
    if any(h.dry_sha == merge.dry for h in ledger.holds):
        return "held"
    if ledger.pin is not None and ledger.pin.dry_sha != merge.dry:
        return "pinned elsewhere"
    return None


def merge_problems(world: World, history: History, facts: Facts, merge: Merge) -> list[str]:
    """A promotion the promoter or its queue merged: not backwards, every gate passed (the
    world as ``facts`` saw it just before)."""
    problems = []
    index = ENVIRONMENTS.index(merge.branch)
    for later in ENVIRONMENTS[index:]:
        if not world.descends(merge.dry, facts.runs[later]):
            problems.append(f"{merge} moves {later} backwards from {facts.runs[later][:7]}")
    statuses = {s.key: s.phase for s in world.plugin.store.statuses("gitops", merge.head)}
    if statuses.get("ci") is not Phase.SUCCESS:
        problems.append(f"{merge} merged with ci {statuses.get('ci')}")
    if index > 0:
        previous = ENVIRONMENTS[index - 1]
        if not world.descends(facts.runs[previous], merge.dry):
            problems.append(f"{merge} merged before {previous} ran it")
        reported = world.plugin.store.statuses("gitops", facts.tips[previous])
        health = {s.key: s.phase for s in reported}
        if health.get("health") is not Phase.SUCCESS:
            problems.append(f"{merge} merged while {previous} was not healthy")
    if merge.branch == STAGING and not world.plugin.store.reviews("gitops", merge.number):
        problems.append(f"{merge} merged with no approval")
    return problems


def record(history: History, world: World, found: list[Merge], after: Facts) -> list[str]:
    """Count ``found`` towards "one merge per change per environment"."""
    problems = []
    for merge in found:
        if merge.revert:
            history.revert_tips.add(after.tips[merge.branch])
            for key in [k for k in history.merges if k[0] == merge.branch]:
                history.merges[key] = 0
            for key in [k for k in history.prs if k[0] == merge.branch]:
                history.prs[key] = set()
            continue
        history.merges[(merge.branch, merge.dry)] += 1
        if history.merges[(merge.branch, merge.dry)] > 1:
            problems.append(f"{merge.dry[:7]} merged twice into {merge.branch}")
    return problems


def state_problems(world: World, history: History, after: Facts) -> list[str]:
    """What must hold whenever the daemon rests: one PR per change, no revert reverted, and
    the checks on each PR saying what the API says."""
    problems = []
    for pr in after.pulls.values():
        if pr.state.value != "open" or pr.head_branch != f"{pr.base_branch}-next":
            continue
        opened = history.prs[(pr.base_branch, world.dry_of(pr.head_sha))]
        opened.add(pr.number)
        if len(opened) > 1:
            problems.append(f"PRs {sorted(opened)} for one change into {pr.base_branch}")
    for branch, ledger in after.ledgers.items():
        for revert in ledger.reverts:
            if revert.trigger == "auto" and revert.bad_hydrated_sha in history.revert_tips:
                problems.append(f"the revert {revert.bad_hydrated_sha[:7]} in {branch} reverted")
    return problems + check_problems(world, after)


def check_problems(world: World, after: Facts) -> list[str]:
    """Each rule's check on an open promotion PR says what its gate says in the API."""
    view = world.runtime.reconciler.view(STRATEGY)
    if view is None or view.decision is None:
        return ["no view of the strategy"]
    problems = []
    for verdict in view.decision.environments:
        pr = next(
            (
                p
                for p in after.pulls.values()
                if p.state.value == "open" and p.head_branch == f"{verdict.branch}-next"
            ),
            None,
        )
        if pr is None or pr.head_sha != world.tip(f"{verdict.branch}-next"):
            continue
        statuses = {s.key: s for s in world.plugin.store.statuses("gitops", pr.head_sha)}
        gates = {g.name: g for g in verdict.gates}
        for key in RULE_KEYS:
            gate, check = gates.get(key), statuses.get(key)
            if gate is None:
                if check is not None and check.phase is not Phase.SUCCESS:
                    problems.append(f"{key} on #{pr.number} says {check.phase}, the API nothing")
            elif check is None or (check.phase, check.description) != (
                gate.phase,
                clip(gate.reason),
            ):
                said = (check.phase, check.description) if check else None
                problems.append(f"{key} on #{pr.number} says {said}, the API {gate.reason!r}")
        for gate in verdict.gates:
            blocks = verdict.state.value == "blocked" and gate.phase is not Phase.SUCCESS
            if blocks and gate.reason not in verdict.reason:
                problems.append(f"{verdict.branch}'s reason leaves out {gate.reason!r}")
    return problems


def race_problems(world: World, merge: Merge, after: Facts, shown: dict[str, Any]) -> list[str]:
    """A merge the queue made before the promoter could take it out: recorded and shown."""
    races = getattr(after.ledgers[merge.branch], "queue_races", ())
    problems = []
    if not any(r.number == merge.number for r in races):
        problems.append(f"{merge} merged by the queue while stopped, not in the ledger")
    env = next(e for e in shown["environments"] if e["branch"] == merge.branch)
    if not any(r["pr"] == merge.number for r in env.get("queueRaces", [])):
        problems.append(f"{merge} merged by the queue while stopped, not shown in the API")
    return problems


def clip(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
