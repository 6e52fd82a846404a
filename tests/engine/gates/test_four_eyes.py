"""Four eyes: the PR's author, and the authors of the change it promotes, never approve it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from promoter.engine import (
    Approvals,
    AuthorsRead,
    MergePullRequest,
    ReviewsRead,
    SetCommitStatus,
    decide,
)
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.four_eyes import is_author, login_of
from promoter.models import Author, Phase, Review
from tests.engine.strategies import dev_then_prod

from .test_builtin import gate, verdict, with_env

KEY = "promoter/approval"
BOT = "promoter-bot"


def approved(
    *reviews: Review,
    authors: tuple[Author, ...] | None = (),
    pr_author: str = BOT,
    **spec: Any,
) -> Snapshot:
    """prod's PR opened by ``pr_author``, promoting commits by ``authors``, with ``reviews``."""
    snapshot = dev_then_prod()
    pr = snapshot.environments[1].pull_request
    assert pr is not None
    return with_env(
        snapshot,
        1,
        gates=(gate(approval=spec),),
        approvals=Approvals(
            reviews=ReviewsRead(value=reviews), change_authors=AuthorsRead(value=authors)
        ),
        pull_request=pr.model_copy(update={"author": pr_author}),
    )


def yes(user: str, name: str = "") -> Review:
    return Review(user=user, approved=True, name=name)


def merges(snapshot: Snapshot) -> list[MergePullRequest]:
    return [a for a in decide(snapshot).actions if isinstance(a, MergePullRequest)]


def test_the_pull_request_author_does_not_approve_their_own_pull_request() -> None:
    snapshot = approved(yes("ada"), pr_author="ada")
    found = verdict(snapshot, 1, KEY)
    assert found.phase is Phase.PENDING
    assert (
        found.reason
        == "waiting for 1 approval (0 so far; not counted: ada opened the pull request)"
    )
    assert merges(snapshot) == []
    assert verdict(approved(yes("ada"), yes("grace"), pr_author="ada"), 1, KEY).reason == (
        "approved by grace"
    )


def test_the_pull_request_author_is_matched_whatever_the_case() -> None:
    assert verdict(approved(yes("Ada"), pr_author="ada"), 1, KEY).phase is Phase.PENDING


def test_an_author_of_a_promoted_dry_commit_does_not_approve_it() -> None:
    ada = Author(name="Ada Lovelace", email="ada@example.com")
    snapshot = approved(yes("ada"), authors=(ada,))
    found = verdict(snapshot, 1, KEY)
    assert found.phase is Phase.PENDING
    assert "not counted: ada wrote a change being promoted" in found.reason
    assert merges(snapshot) == []


def test_a_co_author_does_not_approve_the_change_either() -> None:
    people = (
        Author(name="Bob", email="bob@example.com"),
        Author(name="Carol", email="carol@x.org"),
    )
    assert verdict(approved(yes("carol"), authors=people), 1, KEY).phase is Phase.PENDING


def test_without_exclude_change_authors_a_change_author_counts_but_the_pr_author_never() -> None:
    ada = Author(name="ada", email="ada@example.com")
    off = {"exclude_change_authors": False}
    assert verdict(approved(yes("ada"), authors=(ada,), **off), 1, KEY).phase is Phase.SUCCESS
    assert (
        verdict(approved(yes("ada"), authors=(ada,), pr_author="ada", **off), 1, KEY).phase
        is Phase.PENDING
    )


def test_authors_that_cannot_be_read_make_the_gate_wait_with_the_reason() -> None:
    snapshot = with_env(
        approved(yes("grace")),
        1,
        approvals=Approvals(
            reviews=ReviewsRead(value=(yes("grace"),)),
            change_authors=AuthorsRead(
                reason="approval: the authors of the change cannot be read: gone"
            ),
        ),
    )
    found = verdict(snapshot, 1, KEY)
    assert (found.phase, found.reason) == (
        Phase.PENDING,
        "approval: the authors of the change cannot be read: gone",
    )
    assert merges(snapshot) == []


def test_a_pull_request_opened_in_this_pass_is_judged_as_one_without_reviews() -> None:
    snapshot = with_env(approved(), 1, pull_request=None, approvals=Approvals())
    decision = decide(snapshot)
    found = next(g for g in decision.environments[1].gates if g.name == KEY)
    assert found.reason == "waiting for 1 approval (0 so far)"
    [written] = [
        a.status for a in decision.actions if isinstance(a, SetCommitStatus) and a.status.key == KEY
    ]
    assert written.description == found.reason


# --- who is whom -----------------------------------------------------------------------


def test_scm_noreply_addresses_name_the_login() -> None:
    assert login_of("12345+ada@users.noreply.github.com") == "ada"
    assert login_of("ada@users.noreply.github.com") == "ada"
    assert login_of("678-grace@users.noreply.gitlab.example.com") == "grace"
    assert login_of("linus@noreply.codeberg.org") == "linus"
    assert login_of("Ada@Example.com") == "ada"
    assert login_of("not an address") == ""


def test_a_reviewer_is_matched_by_e_mail_login_author_name_or_display_name() -> None:
    author = Author(name="Ada Lovelace", email="12345+ada@users.noreply.github.com")
    assert is_author(Review(user="ada", approved=True), author)
    assert is_author(Review(user="alovelace", approved=True, name="Ada Lovelace"), author)
    assert is_author(Review(user="ada lovelace", approved=True), author)
    assert not is_author(Review(user="grace", approved=True, name="Grace Hopper"), author)
    assert not is_author(Review(user="", approved=True), Author(name="", email=""))


def test_an_azure_devops_reviewer_is_matched_by_the_whole_e_mail_they_sign_in_with() -> None:
    author = Author(name="A. Lovelace", email="Ada@Fabrikam.example")
    ada = Review(user="ada@fabrikam.example", approved=True, name="Ada Lovelace")
    assert is_author(ada, author)
    snapshot = approved(ada, authors=(author,))
    assert verdict(snapshot, 1, KEY).reason == (
        "waiting for 1 approval (0 so far; not counted: ada@fabrikam.example wrote a change "
        "being promoted)"
    )
    other = Review(user="ada@partner.example", approved=True, name="Ada Byron")
    assert not is_author(other, author)


people = st.lists(
    st.sampled_from(["ada", "grace", "linus", "Ada", "GRACE"]), min_size=0, max_size=4
)


@given(people, people, st.sampled_from(["ada", "grace", "linus"]), st.integers(1, 3))
def test_no_approval_by_an_author_or_the_pr_author_ever_counts(
    reviewers: list[str], writers: list[str], opener: str, count: int
) -> None:
    authors = tuple(Author(name=w, email=f"{w.lower()}@example.com") for w in writers)
    snapshot = approved(
        *(yes(r) for r in reviewers), authors=authors, pr_author=opener, count=count
    )
    found = verdict(snapshot, 1, KEY)
    barred = {w.casefold() for w in writers} | {opener.casefold()}
    # Reviewers differing only in case are distinct users to the SCM; count them as it does.
    counted = {r for r in reviewers if r.casefold() not in barred}
    assert (found.phase is Phase.SUCCESS) == (len(counted) >= count)
