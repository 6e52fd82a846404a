"""Property-based tests of the engine: the safety rules hold for every random strategy.

The oracles here re-state DESIGN.md §3 independently of ``promoter.engine.gates.gates``.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import Phase as Search
from hypothesis import assume, find, given, settings
from hypothesis import strategies as st

from promoter.engine import (
    GATES_KEY,
    HOLD_KEY,
    PREVIOUS_ENVIRONMENT_KEY,
    ClosePullRequest,
    Decision,
    EnvState,
    HealthyRecord,
    MergePullRequest,
    OpenPullRequest,
    RecordHealthy,
    SetCommitStatus,
    Snapshot,
    UpdatePullRequest,
    decide,
    read_metadata,
)
from promoter.engine.core.ledger_state import EnvLedger
from promoter.engine.core.pr_text import body
from promoter.engine.core.snapshot import CommitState, EnvironmentSnapshot
from promoter.engine.gates.publish import clip
from promoter.models import DryCommit, Phase, PullRequest, PullRequestState

from .strategies import NOW, snapshots

some_snapshots = st.one_of(snapshots(), snapshots(focus=True))

# --- oracles ----------------------------------------------------------------------------


def readable(env: EnvironmentSnapshot) -> bool:
    commits = [c for c in (env.active, env.proposed) if c is not None]
    return (
        env.error is None
        and env.active is not None
        and all(c.dry_sha is not None and c.metadata_error is None for c in commits)
    )


def effective(snapshot: Snapshot, index: int) -> str | None:
    """The dry SHA an environment counts as being on (rule 1), None when unreadable."""
    env = snapshot.environments[index]
    if not readable(env) or env.active is None:
        return None
    active, proposed = env.active.dry_sha, env.proposed.dry_sha if env.proposed else None
    assert active is not None
    if proposed is not None and env.proposed is not None:
        same_tree = env.proposed.tree_sha == env.active.tree_sha
        if proposed == active or (same_tree and snapshot.descends(proposed, active)):
            return proposed
    return active


def success(commit: CommitState, keys: tuple[str, ...]) -> bool:
    return all((s := commit.status(k)) is not None and s.phase is Phase.SUCCESS for k in keys)


def merges(decision: Decision) -> list[MergePullRequest]:
    return [a for a in decision.actions if isinstance(a, MergePullRequest)]


def proposed_of(snapshot: Snapshot, index: int) -> CommitState:
    proposed = snapshot.environments[index].proposed
    assert proposed is not None and proposed.dry_sha is not None
    return proposed


# --- the properties ---------------------------------------------------------------------


@given(some_snapshots)
def test_a_merge_never_moves_an_environment_or_a_later_one_backwards(snapshot: Snapshot) -> None:
    for merge in merges(decide(snapshot)):
        sha = proposed_of(snapshot, merge.environment).dry_sha
        assert sha is not None and merge.dry_sha == sha
        assert not backwards(snapshot, merge.environment)


@given(snapshots())
def test_no_pull_request_is_opened_or_updated_for_a_move_backwards(snapshot: Snapshot) -> None:
    asked = [
        action.environment
        for action in decide(snapshot).actions
        if isinstance(action, OpenPullRequest | UpdatePullRequest)
    ]
    assert [index for index in asked if backwards(snapshot, index)] == []


def backwards(snapshot: Snapshot, index: int) -> bool:
    """Merging environment ``index`` would put it or a later one on an older commit."""
    sha = proposed_of(snapshot, index).dry_sha
    assert sha is not None
    return any(
        later.active is not None
        and later.active.dry_sha is not None
        and not snapshot.descends(sha, later.active.dry_sha)
        for later in snapshot.environments[index:]
    )


@given(some_snapshots)
def test_a_merge_only_happens_when_every_gate_is_success(snapshot: Snapshot) -> None:
    for merge in merges(decide(snapshot)):
        index = merge.environment
        env, proposed = snapshot.environments[index], proposed_of(snapshot, index)
        assert readable(env) and env.auto_merge
        assert success(proposed, env.proposed_keys)
        assert set(merge.required_keys) == set(env.proposed_keys)
        if index > 0:
            previous = snapshot.environments[index - 1]
            at = effective(snapshot, index - 1)
            assert at is not None and proposed.dry_sha is not None
            assert snapshot.descends(at, proposed.dry_sha)
            assert previous.active is not None
            assert success(previous.active, previous.active_keys)


@given(some_snapshots)
def test_a_merge_always_guards_on_the_proposed_tip_and_the_pr_head(snapshot: Snapshot) -> None:
    for merge in merges(decide(snapshot)):
        env = snapshot.environments[merge.environment]
        pr = env.pull_request
        assert pr is not None and pr.state is PullRequestState.OPEN and not pr.draft
        assert merge.number == pr.number
        assert merge.expected_head_sha == proposed_of(snapshot, merge.environment).hydrated_sha
        assert merge.expected_head_sha == pr.head_sha


def ordered(snapshot: Snapshot) -> bool:
    """Each environment is on an ancestor of (or the same as) the previous one's commit."""
    shas = [effective(snapshot, i) for i in range(len(snapshot.environments))]
    return all(
        earlier is not None and later is not None and snapshot.descends(earlier, later)
        for earlier, later in pairwise(shas)
    )


@given(snapshots(ordered=True))
def test_applying_the_merges_keeps_environments_in_order(snapshot: Snapshot) -> None:
    assume(ordered(snapshot))
    after = apply(snapshot, decide(snapshot), merge=True)
    assert ordered(after)


@given(snapshots())
def test_every_check_written_says_what_its_gates_verdict_says(snapshot: Snapshot) -> None:
    """Truthful checks: a check is its gate's verdict, word for word (clipped to 140), and
    a check not on the head yet is first written once decided (a summary of an environment
    a person merges aside)."""
    decision = decide(snapshot)
    untrue = []
    for action in decision.actions:
        if not isinstance(action, SetCommitStatus):
            continue
        env = snapshot.environments[action.environment]
        verdict = decision.environments[action.environment]
        gate = next((g for g in verdict.gates if g.name == action.status.key), None)
        if gate is not None and (
            action.status.phase is not gate.phase or action.status.description != clip(gate.reason)
        ):
            untrue.append(("not its gate's verdict", action))
        before = proposed_of(snapshot, action.environment).status(action.status.key)
        first = before is None and action.status.phase is Phase.PENDING
        if first and (action.status.key != GATES_KEY or env.auto_merge):
            untrue.append(("written before it was decided", action))
    assert untrue == []


@given(snapshots())
def test_an_environment_whose_active_gate_failed_is_never_shown_up_to_date(
    snapshot: Snapshot,
) -> None:
    for env, verdict in zip(snapshot.environments, decide(snapshot).environments, strict=True):
        failed = env.active is not None and any(
            (s := env.active.status(key)) is not None and s.phase is Phase.FAILURE
            for key in env.active_keys
        )
        shown = verdict.state in (EnvState.UP_TO_DATE, EnvState.UNHEALTHY)
        assert not shown or (verdict.state is EnvState.UNHEALTHY) == failed
        assert not shown or ("failed on" in verdict.reason) == failed


@given(snapshots())
def test_deciding_twice_gives_the_same_decision(snapshot: Snapshot) -> None:
    copy = Snapshot.model_validate(snapshot.model_dump())
    assert decide(snapshot) == decide(copy)


@given(snapshots())
def test_once_its_actions_are_carried_out_a_second_pass_has_nothing_left_to_write(
    snapshot: Snapshot,
) -> None:
    after = apply(snapshot, decide(snapshot), merge=False)
    kinds = (OpenPullRequest, UpdatePullRequest, SetCommitStatus, RecordHealthy, ClosePullRequest)
    assert [a for a in decide(after).actions if isinstance(a, kinds)] == []


@given(snapshots())
def test_every_environment_gets_a_verdict_that_agrees_with_the_actions(
    snapshot: Snapshot,
) -> None:
    decision = decide(snapshot)
    assert [v.branch for v in decision.environments] == [e.branch for e in snapshot.environments]
    merged = {m.environment for m in merges(decision)}
    for index, verdict in enumerate(decision.environments):
        assert (verdict.state is EnvState.PROMOTING) == (index in merged)
        assert verdict.reason
        if verdict.state in (EnvState.ERROR, EnvState.WAITING):
            mine = [a for a in decision.actions if getattr(a, "environment", None) == index]
            assert all(isinstance(a, RecordHealthy) for a in mine)
    assert decision.requeue_after is None or decision.requeue_after >= 0
    for action in decision.actions:
        if isinstance(action, SetCommitStatus):
            assert action.status.key in (PREVIOUS_ENVIRONMENT_KEY, HOLD_KEY, GATES_KEY)
            env = snapshot.environments[action.environment]
            if action.status.key == PREVIOUS_ENVIRONMENT_KEY:
                assert action.environment > 0
            if action.status.key == GATES_KEY:
                gates = decision.environments[action.environment].gates
                own = [g for g in gates if g.name not in snapshot.folded_keys]
                assert (action.status.phase is Phase.SUCCESS) == all(
                    gate.phase is Phase.SUCCESS for gate in own
                )
                summary_was_there = proposed_of(snapshot, action.environment).status(GATES_KEY)
                assert not env.auto_merge or env.ledger.paused or summary_was_there
            assert action.sha == proposed_of(snapshot, action.environment).hydrated_sha
            assert len(action.status.description) <= 140


@given(snapshots())
def test_an_environment_is_recorded_healthy_only_when_every_active_gate_is_success(
    snapshot: Snapshot,
) -> None:
    for record in [a for a in decide(snapshot).actions if isinstance(a, RecordHealthy)]:
        env = snapshot.environments[record.environment]
        assert env.error is None and env.active is not None
        recorded = (record.dry_sha, record.hydrated_sha)
        assert recorded == (env.active.dry_sha, env.active.hydrated_sha)
        assert success(env.active, env.active_keys)
        last = env.last_healthy
        assert last is None or (last.dry_sha, last.hydrated_sha) != recorded


CASES: dict[str, Callable[[Snapshot, Decision], bool]] = {
    "a merge": lambda s, d: bool(merges(d)),
    "a merge after an earlier environment": lambda s, d: any(m.environment for m in merges(d)),
    "a pull request opened": lambda s, d: any(isinstance(a, OpenPullRequest) for a in d.actions),
    "a pull request updated": lambda s, d: any(isinstance(a, UpdatePullRequest) for a in d.actions),
    "a healthy record after an older one": lambda s, d: any(
        isinstance(a, RecordHealthy) and s.environments[a.environment].last_healthy
        for a in d.actions
    ),
    "the summary check written": lambda s, d: any(
        isinstance(a, SetCommitStatus) and a.status.key == GATES_KEY for a in d.actions
    ),
    "an environment waiting": lambda s, d: any(v.state is EnvState.WAITING for v in d.environments),
    "an environment shown unhealthy": lambda s, d: any(
        v.state is EnvState.UNHEALTHY for v in d.environments
    ),
}
"""What the properties above speak of: each must be drawn, or they hold vacuously."""
FIND = settings(max_examples=2000, phases=[Search.explicit, Search.reuse, Search.generate])
"""The first example found will do: no shrinking."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_snapshots_drawn_hold_every_case_the_properties_speak_of(case: str) -> None:
    holds = CASES[case]
    found = find(some_snapshots, lambda snapshot: holds(snapshot, decide(snapshot)), settings=FIND)
    assert holds(found, decide(found))


@given(st.text())
def test_reading_metadata_from_any_text_never_raises(text: str) -> None:
    result = read_metadata(text)
    assert result is None or isinstance(result, dict)


_line = st.text(min_size=0, max_size=40)


@given(_line, _line, st.lists(st.tuples(_line, _line), max_size=5), st.lists(_line, max_size=3))
def test_the_metadata_block_reads_back_whatever_the_names_and_subjects(
    strategy: str, branch: str, commits: list[tuple[str, str]], keys: list[str]
) -> None:
    changelog = [DryCommit(sha="a" * 40, subject=s, author=a) for s, a in commits]
    text = body(
        strategy=strategy,
        branch=branch,
        dry_sha="b" * 40,
        active_dry_sha="c" * 40,
        changelog=changelog,
        required_keys=keys,
    )
    assert read_metadata(text) == {
        "strategy": strategy,
        "environment": branch,
        "drySha": "b" * 40,
        "activeDrySha": "c" * 40,
    }


# --- carrying out actions on a snapshot, as the reconciler would --------------------------


def apply(snapshot: Snapshot, decision: Decision, *, merge: bool) -> Snapshot:
    envs = list(snapshot.environments)
    for action in decision.actions:
        if isinstance(action, MergePullRequest) and not merge:
            continue
        env = envs[action.environment]
        envs[action.environment] = env.model_copy(update=_effect(env, action))
    return snapshot.model_copy(update={"environments": tuple(envs)})


def _effect(env: EnvironmentSnapshot, action: object) -> dict[str, object]:
    proposed, pr = env.proposed, env.pull_request
    if isinstance(action, SetCommitStatus):
        assert proposed is not None and action.sha == proposed.hydrated_sha
        kept = tuple(s for s in proposed.statuses if s.key != action.status.key)
        return {"proposed": proposed.model_copy(update={"statuses": (*kept, action.status)})}
    if isinstance(action, OpenPullRequest):
        assert proposed is not None
        opened = PullRequest(
            id="new",
            number=900,
            head_branch=action.head,
            base_branch=action.base,
            head_sha=proposed.hydrated_sha,
            state=PullRequestState.OPEN,
            title=action.title,
            body=action.body,
            labels=action.labels,
        )
        return {"pull_request": opened}
    if isinstance(action, UpdatePullRequest):
        assert pr is not None
        fields = {"title": action.title, "body": action.body, "labels": action.labels}
        return {"pull_request": pr.model_copy(update=fields)}
    if isinstance(action, ClosePullRequest):
        assert pr is not None
        return {"pull_request": pr.model_copy(update={"state": PullRequestState.CLOSED})}
    if isinstance(action, RecordHealthy):
        record = HealthyRecord(
            dry_sha=action.dry_sha, hydrated_sha=action.hydrated_sha, healthy_since=NOW
        )
        return {"ledger": EnvLedger(healthy=(record,))}
    assert isinstance(action, MergePullRequest) and proposed is not None and pr is not None
    active = CommitState(
        hydrated_sha="f" * 40, tree_sha=proposed.tree_sha, dry_sha=proposed.dry_sha
    )
    return {
        "active": active,
        "pull_request": pr.model_copy(update={"state": PullRequestState.MERGED}),
    }
