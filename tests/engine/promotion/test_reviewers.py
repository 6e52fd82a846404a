"""Reviewer requests (pure): asked for on the open promotion PR once; the ledger's record of
the PR stops every later request."""

from __future__ import annotations

from promoter.engine import RequestReviewers, decide
from promoter.engine.core.ledger_state import EnvLedger

from ..reverts.test_revert import edit
from ..strategies import build
from ..test_decide import promotable


def requests(**env: object) -> list[RequestReviewers]:
    snapshot = edit(build(promotable()), 0, **env)
    return [a for a in decide(snapshot).actions if isinstance(a, RequestReviewers)]


def test_the_reviewers_are_asked_for_on_the_open_pr() -> None:
    [request] = requests(reviewers=("ada",), reviewer_teams=("acme/sre",))
    assert (request.users, request.teams) == (("ada",), ("acme/sre",))


def test_a_pr_already_asked_about_is_not_asked_again() -> None:
    snapshot = build(promotable())
    pr = snapshot.environments[0].pull_request
    assert pr is not None
    done = EnvLedger(reviewers_requested=(pr.number,))
    assert requests(reviewers=("ada",), ledger=done) == []


def test_no_reviewers_configured_asks_nobody() -> None:
    assert requests() == []
