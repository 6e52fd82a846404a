"""A stateful model of the daemon: random interleavings of everything that can happen to a
strategy, with the invariants checked after every step.

The machine drives the real daemon (``promoter.wiring.Daemon``'s runtime, never started)
on a real repository and the local SCM with a merge queue of its own on dev and staging
(prod merges directly), through random sequences of:

- the hydrator pushing a change (to every ``-next`` branch);
- CI reporting ``ci`` green, red or pending on a proposed commit, ``health`` on an active
  one, and the queue's check green or red on every merge group (the queue then merges or
  drops);
- a person approving staging's PR (staging needs one approval), holding and releasing,
  pinning and unpinning an environment, freezing and unfreezing it, the strategy or
  everything, asking for a revert, merging a promotion PR by hand past the queue;
- the daemon restarting with its state directory kept, or lost (the SCM's kept);
- a freeze, hold or pin landing on a branch whose PR waits in the queue, and the queue's
  checks passing after the promoter has run, or (a *race*) before it has.

After each step the strategy is reconciled by hand until a pass decides nothing (no
sleeps, no timers: the clock is real but nothing waits on it; reverts settle at once),
and these hold (``invariants``):

- nothing the promoter or its queue merges is frozen, held or pinned elsewhere, unless a
  race merged it, and then it is in the ledger and the API;
- never backwards: a promotion descends from what its environment and every later one runs;
- never a failing or missing gate merged: ``ci`` green on the head merged, the environment
  before it running the change healthy, staging's approval given;
- one PR and one merge per change per environment (until a revert there);
- a revert is never reverted automatically;
- every rule's check on a PR (hold, pin, freeze) says what the API says, and a blocked
  environment's reason names every gate that blocks it;
- the queue is asked to take a PR in, or out, at most once per step; the decisions settle.

``make test`` runs a short profile with a fixed seed (``derandomize``); ``make test-slow``
a long one (``-m slow``). A failure prints the shrunk sequence of steps.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from promoter.daemon import OperationError
from promoter.errors import PromoterError
from promoter.http import strategy_json
from promoter.models import Phase

from . import invariants as inv
from .world import APPROVER, DEV, ENVIRONMENTS, QUEUED, STAGING, STRATEGY, World

ENVIRONMENT = st.sampled_from(ENVIRONMENTS)
PHASE = st.sampled_from([Phase.SUCCESS, Phase.FAILURE, Phase.PENDING])
SCOPE = st.sampled_from(["everything", "strategy", *ENVIRONMENTS])
REFUSED = (OperationError, PromoterError, LookupError)
"""What a person's request may be answered with; a refusal is fine, a crash is not."""


class Interleavings(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="promoter-model-"))
        self.world = World(self.root)
        self.history = inv.History()
        self.problems: list[str] = []

    def teardown(self) -> None:
        self.world.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- a step and its checks -----------------------------------------------------------

    def step(self, actor: str, action: Callable[[], object], *, race: bool = False) -> None:
        """Do ``action`` (by ``actor``), then reconcile until nothing is decided; check."""
        world = self.world
        world.calls.clear()
        before = world.facts()
        with contextlib.suppress(*REFUSED):
            action()
        mid = world.facts()
        acted = inv.merges(world, before, mid, actor)
        settled = world.reconcile()
        after = world.facts()
        done = inv.merges(world, mid, after, "promoter")
        shown = strategy_json(world.config.strategy(STRATEGY), world.runtime.view(STRATEGY))
        for merge, facts in [*((m, before) for m in acted), *((m, mid) for m in done)]:
            if merge.revert or merge.actor == "person":
                continue
            why = inv.stop(self.history, facts, merge)
            if why is not None and race and merge.actor == "queue":
                self.problems += inv.race_problems(world, merge, after, shown)
            elif why is not None:
                self.problems.append(f"{merge} merged while {why}")
            self.problems += inv.merge_problems(world, self.history, facts, merge)
        self.problems += inv.record(self.history, world, [*acted, *done], after)
        self.problems += inv.state_problems(world, self.history, after)
        if not settled:
            self.problems.append(f"the decisions did not settle in {world.calls}")
        for (kind, number), count in world.calls.items():
            if count > 1:
                self.problems.append(f"#{number} asked to {kind} {count} times in one step")

    @invariant()
    def nothing_went_wrong(self) -> None:
        assert not self.problems, "\n".join(self.problems)

    # --- the hydrator and CI -------------------------------------------------------------

    @initialize()
    def a_change_waits_in_devs_queue(self) -> None:
        self.step("hydrator", self.world.push)
        world = self.world
        self.step("ci", lambda: world.report(world.tip(f"{DEV}-next"), "ci", Phase.SUCCESS))

    @rule()
    def the_hydrator_pushes(self) -> None:
        self.step("hydrator", self.world.push)

    @rule(branch=ENVIRONMENT, phase=PHASE)
    def ci_reports_on_a_proposed_commit(self, branch: str, phase: Phase) -> None:
        self.step("ci", lambda: self.world.report(self.world.tip(f"{branch}-next"), "ci", phase))

    @rule(branch=ENVIRONMENT, phase=PHASE)
    def health_is_reported_on_an_active_commit(self, branch: str, phase: Phase) -> None:
        self.step("ci", lambda: self.world.report(self.world.tip(branch), "health", phase))

    @rule(phase=st.sampled_from([Phase.SUCCESS, Phase.FAILURE]))
    def ci_reports_on_the_merge_groups(self, phase: Phase) -> None:
        self.step("queue", lambda: self.world.report_groups(phase))

    # --- people --------------------------------------------------------------------------

    @rule()
    def a_person_approves_staging(self) -> None:
        ops = self.world.runtime.operations
        self.step("person", lambda: ops.approve(STRATEGY, STAGING, user=APPROVER))

    @rule(branch=ENVIRONMENT)
    def a_person_holds_what_is_proposed(self, branch: str) -> None:
        ops = self.world.runtime.operations
        self.step("person", lambda: ops.hold(STRATEGY, branch, dry_sha=None, reason="model"))

    @rule(branch=ENVIRONMENT)
    def a_person_releases(self, branch: str) -> None:
        ops = self.world.runtime.operations
        self.step("person", lambda: ops.release(STRATEGY, branch, dry_sha=None))

    @rule(branch=ENVIRONMENT)
    def a_person_pins_what_runs(self, branch: str) -> None:
        self.step("person", lambda: self.pin(branch))

    @rule(branch=ENVIRONMENT)
    def a_person_unpins(self, branch: str) -> None:
        self.step("person", lambda: self.world.runtime.operations.unpin(STRATEGY, branch))

    @rule(scope=SCOPE)
    def a_person_freezes(self, scope: str) -> None:
        self.step("person", lambda: self.freeze(scope))

    @rule(scope=SCOPE)
    def a_person_unfreezes(self, scope: str) -> None:
        self.step("person", lambda: self.unfreeze(scope))

    @rule(branch=ENVIRONMENT)
    def a_person_asks_for_a_revert(self, branch: str) -> None:
        ops = self.world.runtime.operations
        self.step("person", lambda: ops.revert(STRATEGY, branch, to=None))

    @rule(branch=ENVIRONMENT)
    def a_person_merges_a_promotion_past_the_queue(self, branch: str) -> None:
        self.step("person", lambda: self.merge_by_hand(branch))

    # --- the daemon ----------------------------------------------------------------------

    @rule(wipe=st.booleans())
    def the_daemon_restarts(self, wipe: bool) -> None:
        self.step("daemon", lambda: self.world.restart(wipe=wipe))

    @precondition(lambda self: bool(self.world.plugin.queue_groups(repo=self.world.repo)))
    @rule(
        kind=st.sampled_from(["freeze", "hold", "pin"]),
        branch=st.sampled_from(QUEUED),
        race=st.booleans(),
    )
    def a_stop_lands_while_a_promotion_is_queued(self, kind: str, branch: str, race: bool) -> None:
        """A freeze, a hold or a pin lands on a branch whose PR waits in the queue, then the
        queue's checks pass on every merge group: after the promoter has run (it must have
        taken the PR out), or, a *race*, before it has."""

        def stop() -> None:
            if kind == "freeze":
                self.freeze(branch)
            elif kind == "hold":
                ops = self.world.runtime.operations
                ops.hold(STRATEGY, branch, dry_sha=None, reason="model")
            else:
                self.pin(branch)

        if not race:
            self.step("person", stop)
            self.step("queue", lambda: self.world.report_groups(Phase.SUCCESS))
            return
        try:
            stop()
        except REFUSED:
            return
        self.step("queue", lambda: self.world.report_groups(Phase.SUCCESS), race=True)

    # --- what the steps do ---------------------------------------------------------------

    def pin(self, branch: str) -> None:
        runs = self.world.dry_of(self.world.tip(branch))
        self.world.runtime.operations.pin(STRATEGY, branch, dry_sha=runs, reason="model")

    def freeze(self, scope: str) -> None:
        strategy = None if scope == "everything" else STRATEGY
        environment = scope if scope in ENVIRONMENTS else None
        self.world.runtime.freezes.freeze(
            strategy=strategy, environment=environment, reason="model", by="model"
        )
        self.history.frozen.add(scope)

    def unfreeze(self, scope: str) -> None:
        strategy = None if scope == "everything" else STRATEGY
        environment = scope if scope in ENVIRONMENTS else None
        self.history.frozen.discard(scope)
        self.world.runtime.freezes.unfreeze(strategy=strategy, environment=environment, by="model")

    def merge_by_hand(self, branch: str) -> None:
        pr = next(
            (
                p
                for p in self.world.pulls().values()
                if p.state.value == "open" and p.head_branch == f"{branch}-next"
            ),
            None,
        )
        if pr is not None:
            self.world.plugin.merge_pull_request(
                repo=self.world.repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
            )


SHORT = settings(
    max_examples=8,
    stateful_step_count=12,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
LONG = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.timeout(900)  # a bound on a stuck run, not on the time it takes (~60 s of CPU)
def test_every_interleaving_keeps_the_invariants() -> None:
    run_state_machine_as_test(Interleavings, settings=SHORT)


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_every_interleaving_keeps_the_invariants_at_length() -> None:
    run_state_machine_as_test(Interleavings, settings=LONG)
