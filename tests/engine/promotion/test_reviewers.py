"""Reviewer requests (pure): asked for on the open promotion PR once; the ledger's record of
the PR stops every later request."""

from __future__ import annotations

from promoter.engine import Approvals, AuthorsRead, RequestReviewers, decide
from promoter.engine.core.ledger_state import EnvLedger
from promoter.models import Author

from ..reverts.test_revert import edit
from ..strategies import build
from ..test_decide import promotable


def requests(
    reviewers: tuple[str, ...] = (),
    reviewer_teams: tuple[str, ...] = (),
    change_authors: tuple[Author, ...] | None = None,
    **env: object,
) -> list[RequestReviewers]:
    approvals = Approvals(
        reviewers=reviewers,
        reviewer_teams=reviewer_teams,
        change_authors=AuthorsRead(value=change_authors),
    )
    snapshot = edit(build(promotable()), 0, approvals=approvals, **env)
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


def test_whose_approval_would_not_count_is_left_out_with_why() -> None:
    snapshot = build(promotable())
    pr = snapshot.environments[0].pull_request
    assert pr is not None
    opened = pr.model_copy(update={"author": "Octocat"})
    authors = (Author(name="Grace Hopper", email="12345+grace@users.noreply.github.com"),)
    [request] = requests(
        reviewers=("ada", "octocat", "grace"),
        pull_request=opened,
        change_authors=authors,
    )
    assert request.users == ("ada",)
    assert request.left_out == (
        "octocat (opened the pull request)",
        "grace (wrote a change being promoted)",
    )
    [nobody] = requests(reviewers=("octocat",), pull_request=opened)
    assert (nobody.users, nobody.left_out) == ((), ("octocat (opened the pull request)",))
