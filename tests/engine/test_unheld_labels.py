"""A label the SCM does not keep is not drift: the engine does not rewrite the PR for it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from promoter.engine import Decision, UpdatePullRequest, decide
from promoter.engine.core.snapshot import Snapshot

from .strategies import Env, build, pull_request


def promotable(**changes: object) -> Snapshot:
    """dev on 1 with 3 proposed, ci green, an open PR on the proposed tip, labels wanted."""
    env = Env(
        "dev",
        active=1,
        proposed=3,
        proposed_keys=("ci",),
        proposed_statuses={"ci": "success"},
        pr="current",
    )
    snapshot = build(env).model_copy(update={"labels": ("promotion", "dev")})
    return snapshot.model_copy(update=changes)


def with_pr_labels(snapshot: Snapshot, labels: tuple[str, ...], **pr: object) -> Snapshot:
    env = snapshot.environments[0]
    changed = pull_request(snapshot, 0).model_copy(update={"labels": labels, **pr})
    envs = (env.model_copy(update={"pull_request": changed}),)
    return snapshot.model_copy(update={"environments": envs})


def updates(decision: Decision) -> list[UpdatePullRequest]:
    return [a for a in decision.actions if isinstance(a, UpdatePullRequest)]


def test_a_label_the_scm_did_not_keep_is_not_asked_for_again() -> None:
    snapshot = with_pr_labels(promotable(unheld_labels=("promotion",)), ("dev",))
    assert updates(decide(snapshot)) == []


def test_without_that_memory_the_missing_label_is_asked_for() -> None:
    snapshot = with_pr_labels(promotable(), ("dev",))
    (update,) = updates(decide(snapshot))
    assert update.labels == ("dev", "promotion")


def test_a_pr_updated_for_its_title_is_not_asked_for_the_label_the_scm_drops() -> None:
    snapshot = with_pr_labels(promotable(unheld_labels=("promotion",)), (), title="old title")
    (update,) = updates(decide(snapshot))
    assert update.labels == ("dev",)


@given(unheld=st.sets(st.sampled_from(["promotion", "dev", "other"])))
def test_no_update_ever_asks_for_a_label_the_scm_did_not_keep(unheld: set[str]) -> None:
    snapshot = promotable(unheld_labels=tuple(sorted(unheld)))
    for held in ((), ("dev",), ("promotion",), ("promotion", "dev")):
        for update in updates(decide(with_pr_labels(snapshot, held))):
            assert not (set(update.labels) - set(held)) & unheld
