"""Gates: what a proposed commit must pass before it is merged (rules 3-5), and the
reading of an environment's position they share with ``decide``.

A gate is any callable ``(snapshot, index) -> GateVerdict``. ``gates_for`` lists
the gates of one environment: one per proposed status key, the environments it
waits for (``engine.dag``), the configured built-in gates (``engine.builtin``),
then ``BUILTIN_GATES`` (holds and pauses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from promoter.config.gates import GateSpec
from promoter.engine.core.actions import HOLD_KEY, PREVIOUS_ENVIRONMENT_KEY, GateVerdict
from promoter.engine.core.dag import single_upstream, upstreams_of
from promoter.engine.core.pr_text import short, unique
from promoter.engine.core.snapshot import CommitState, EnvironmentSnapshot, Snapshot
from promoter.engine.gates.builtin import PURE_KINDS, evaluate_builtin
from promoter.engine.gates.freeze import frozen
from promoter.engine.gates.rollout import blocked_change, notice, pinned
from promoter.models import Phase

Gate = Callable[[Snapshot, int], GateVerdict | None]
"""A gate's verdict for environment ``index``, or None when it does not apply there."""

PAUSED_GATE = "promoter/paused"


def hold(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """Rule 5 (holds): a dry SHA reverted out of this environment, or pinned by a person."""
    env = snapshot.environments[index]
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    held = next((h for h in env.ledger.holds if h.dry_sha == proposed), None)
    if held is None:
        return None
    reason = f"{short(held.dry_sha)} is held in {env.branch}: {held.reason}"
    return GateVerdict(name=HOLD_KEY, phase=Phase.FAILURE, reason=reason)


def paused(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """Auto-promotion stopped after a failure following a revert, until a person releases it."""
    env = snapshot.environments[index]
    if env.ledger.paused is None:
        return None
    reason = f"auto-promotion of {env.branch} is paused: {env.ledger.paused}"
    return GateVerdict(name=PAUSED_GATE, phase=Phase.FAILURE, reason=reason)


BUILTIN_GATES: tuple[Gate, ...] = (hold, paused, pinned, blocked_change, notice, frozen)
"""Gates every environment passes through after its status gates (rule 5)."""


def error_reason(env: EnvironmentSnapshot) -> str | None:
    """Why this environment cannot be read well enough to decide anything, if it cannot."""
    if env.error:
        return env.error
    for commit in (env.active, env.proposed):
        if commit is not None and commit.metadata_error:
            return commit.metadata_error
    if env.active is None:
        return f"the active branch {env.branch} does not exist"
    for commit in (env.active, env.proposed):
        if commit is not None and commit.dry_sha is None:
            return f"hydrated commit {short(commit.hydrated_sha)} names no dry commit"
    return None


def is_no_op(snapshot: Snapshot, env: EnvironmentSnapshot) -> bool:
    """Nothing to promote (rule 1): the same dry SHA, or a descendant rendered identically."""
    active, proposed = env.active, env.proposed
    if active is None or proposed is None or active.dry_sha is None or proposed.dry_sha is None:
        return False
    if proposed.dry_sha == active.dry_sha:
        return True
    return proposed.tree_sha == active.tree_sha and snapshot.descends(
        proposed.dry_sha, active.dry_sha
    )


def effective_active_dry_sha(snapshot: Snapshot, index: int) -> str | None:
    """The dry SHA environment ``index`` counts as being on, or None when it is in error.

    An environment whose proposed commit is a no-op descendant of its active one
    counts as being on the proposed dry SHA, so that it never blocks later ones.
    """
    env = snapshot.environments[index]
    if error_reason(env) is not None or env.active is None or env.active.dry_sha is None:
        return None
    if env.proposed is not None and env.proposed.dry_sha is not None and is_no_op(snapshot, env):
        return env.proposed.dry_sha
    return env.active.dry_sha


def phase_of(commit: CommitState, key: str) -> Phase:
    """A missing status counts as pending."""
    status = commit.status(key)
    return Phase.PENDING if status is None else status.phase


@dataclass(frozen=True)
class ProposedStatus:
    """Rule 3: the commit status ``key`` is success on the proposed hydrated commit."""

    key: str

    def __call__(self, snapshot: Snapshot, index: int) -> GateVerdict:
        proposed = snapshot.environments[index].proposed
        if proposed is None or proposed.dry_sha is None:
            return GateVerdict(name=self.key, phase=Phase.PENDING, reason="no proposed commit")
        phase = phase_of(proposed, self.key)
        # The status goes on the hydrated commit (the PR head): name it, then the dry one.
        branch = snapshot.environments[index].proposed_branch
        sha, dry = short(proposed.hydrated_sha), short(proposed.dry_sha)
        on = f"{sha} ({branch}, dry {dry})"
        if phase is Phase.PENDING and proposed.by_merge:
            # After a revert (a hotfix, a squash) the promoter merged the active branch
            # into the proposed one: CI ran on the hydrator's commit, not on this one.
            reason = (
                f"waiting for {self.key}: report it on {sha}, the merge commit the promoter"
                f" made on {branch} (dry {dry}); CI has not run on it"
            )
        else:
            reason = {
                Phase.SUCCESS: f"{self.key} passed on {on}",
                Phase.FAILURE: f"{self.key} failed on {on}",
                Phase.PENDING: f"waiting for {self.key}: report it on {sha}, the head of {branch}"
                f" (dry {dry})",
            }[phase]
        said = checked(snapshot.environments[index], proposed, [self.key])
        return GateVerdict(name=self.key, phase=phase, reason=reason + said)


def checked(env: EnvironmentSnapshot, commit: CommitState, keys: Sequence[str]) -> str:
    """ ": <their words>" for the checks among ``keys`` that the promoter runs (HTTP, Argo
    CD, Flux) and that are not success on ``commit``: a reason says why, as the check does."""
    ours = {g.key for g in env.gates if g.kind not in PURE_KINDS}
    words = [
        status.description
        for key in keys
        if key in ours
        and (status := commit.status(key)) is not None
        and status.phase is not Phase.SUCCESS
        and status.description
    ]
    return f": {'; '.join(words)}" if words else ""


def previous_environment(snapshot: Snapshot, index: int) -> GateVerdict:
    """Rule 4: the environments ``index`` waits for run the proposed dry SHA (or later) and
    are healthy: the one before it on a line, ``require`` of each group in a DAG.

    Failure when one of their active gates failed (in a DAG: when a group can no longer
    reach its quorum), pending while anything else is missing.
    """
    single = single_upstream(snapshot, index)
    if single is not None:
        return _after(snapshot, index, single)
    env = snapshot.environments[index]
    name = PREVIOUS_ENVIRONMENT_KEY
    proposed_sha = env.proposed.dry_sha if env.proposed is not None else None
    if proposed_sha is None:
        return GateVerdict(name=name, phase=Phase.PENDING, reason="no proposed commit")
    parts: list[str] = []
    failed_any = False
    for group in upstreams_of(snapshot, index):
        verdicts = {u: _after(snapshot, index, u) for u in group.indices}
        ready = [u for u, v in verdicts.items() if v.phase is Phase.SUCCESS]
        failed = [u for u, v in verdicts.items() if v.phase is Phase.FAILURE]
        if len(ready) >= group.require:
            continue
        branches = ", ".join(snapshot.environments[u].branch for u in group.indices)
        need = "all" if group.require == len(group.indices) else f"{group.require}"
        parts.append(
            f"waiting for {need} of {branches} to run {short(proposed_sha)} healthy"
            f" ({len(ready)} so far)"
        )
        if len(group.indices) - len(failed) < group.require:
            failed_any = True
            parts.append("; ".join(verdicts[u].reason for u in failed))
    if not parts:
        reason = f"every environment before it runs {short(proposed_sha)} and is healthy"
        return GateVerdict(name=name, phase=Phase.SUCCESS, reason=reason)
    phase = Phase.FAILURE if failed_any else Phase.PENDING
    return GateVerdict(name=name, phase=phase, reason="; ".join(parts))


def _after(snapshot: Snapshot, index: int, upstream: int) -> GateVerdict:
    """Environment ``upstream`` is on the proposed dry SHA of ``index`` or later, healthy."""
    env, previous = snapshot.environments[index], snapshot.environments[upstream]
    name = PREVIOUS_ENVIRONMENT_KEY
    proposed_sha = env.proposed.dry_sha if env.proposed is not None else None
    at = effective_active_dry_sha(snapshot, upstream)
    if previous.active is None or previous.active.dry_sha is None or at is None:
        reason = f"previous environment {previous.branch} has an error"
        return GateVerdict(name=name, phase=Phase.PENDING, reason=reason)
    if proposed_sha is None:
        return GateVerdict(name=name, phase=Phase.PENDING, reason="no proposed commit")
    active, dry_sha = previous.active, previous.active.dry_sha
    running = (
        f"{short(active.hydrated_sha)}, the commit {previous.branch} runs (dry {short(dry_sha)})"
    )
    phases = {key: phase_of(active, key) for key in unique(previous.active_keys)}
    failed = [key for key, phase in phases.items() if phase is Phase.FAILURE]
    waiting = [key for key, phase in phases.items() if phase is Phase.PENDING]
    parts: list[str] = []
    there = snapshot.descends(at, proposed_sha)
    said = checked(previous, active, [*failed, *(waiting if there else [])])
    if not there:
        parts.append(f"{previous.branch} is not on {short(proposed_sha)} yet")
    if failed:
        parts.append(f"{_words(failed)} failed on {running}")
    if waiting and there:
        # Only the hydrated commit the environment runs counts: say which, by its SHA.
        them = "it" if len(waiting) == 1 else "them"
        parts.append(
            f"waiting for {_words(waiting)} on {previous.branch}: report {them} on {running}"
        )
    if said and parts:
        parts[-1] += said
    if not parts:
        reason = f"{previous.branch} is on {short(at)} and healthy"
        return GateVerdict(name=name, phase=Phase.SUCCESS, reason=reason)
    phase = Phase.FAILURE if failed else Phase.PENDING
    return GateVerdict(name=name, phase=phase, reason="; ".join(parts))


def gates_for(snapshot: Snapshot, index: int) -> tuple[Gate, ...]:
    """Every gate of environment ``index``, in the order their verdicts are shown."""
    env = snapshot.environments[index]
    gates: list[Gate] = [ProposedStatus(key) for key in unique(env.proposed_keys)]
    if upstreams_of(snapshot, index):
        gates.append(previous_environment)
    gates.extend(Configured(spec) for spec in env.gates if spec.kind in PURE_KINDS)
    gates.extend(BUILTIN_GATES)
    return tuple(gates)


@dataclass(frozen=True)
class Configured:
    """A built-in gate configured under ``gates:`` (soak, window, approval, commit message)."""

    spec: GateSpec

    def __call__(self, snapshot: Snapshot, index: int) -> GateVerdict | None:
        return evaluate_builtin(self.spec, snapshot, index)


def evaluate(snapshot: Snapshot, index: int) -> tuple[GateVerdict, ...]:
    verdicts = (gate(snapshot, index) for gate in gates_for(snapshot, index))
    return tuple(verdict for verdict in verdicts if verdict is not None)


def _words(keys: Sequence[str]) -> str:
    return ", ".join(keys)
