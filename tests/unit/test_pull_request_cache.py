"""The open-PR cache: a webhook saying the known PR ended leaves "none open", not a read."""

from __future__ import annotations

from promoter.models import PullRequest, PullRequestState
from promoter.state.pulls import MISSING, PullRequestCache

KEY = ("gitops", "environment/prod-next", "environment/prod")


def pr(number: int) -> PullRequest:
    return PullRequest(
        id=str(number),
        number=number,
        url=f"https://github.example/acme/gitops/pull/{number}",
        head_branch=KEY[1],
        base_branch=KEY[2],
        head_sha="a" * 40,
        state=PullRequestState.OPEN,
    )


def test_the_known_pr_merged_by_a_person_leaves_none_open() -> None:
    cache = PullRequestCache(max_age=60)
    cache.put(KEY, pr(7))

    cache.ended(KEY, 7)

    assert cache.get(KEY) is None


def test_another_pr_ending_drops_what_was_known() -> None:
    cache = PullRequestCache(max_age=60)
    cache.put(KEY, pr(8))

    cache.ended(KEY, 7)  # a late webhook about an older PR of the same branches

    assert cache.get(KEY) is MISSING


def test_a_pr_ending_that_was_not_known_is_read_again() -> None:
    cache = PullRequestCache(max_age=60)
    cache.put(KEY, None)

    cache.ended(KEY, 7)

    assert cache.get(KEY) is MISSING


def test_the_webhook_of_the_promoters_own_opening_keeps_the_pr_known() -> None:
    cache = PullRequestCache(max_age=60)
    cache.put(KEY, pr(7))

    cache.opened(KEY, 7, "a" * 40)

    assert cache.get(KEY) == pr(7)


def test_an_opening_at_another_head_or_of_another_pr_is_read_again() -> None:
    cache = PullRequestCache(max_age=60)
    for number, head in ((7, "b" * 40), (8, "a" * 40)):
        cache.put(KEY, pr(7))
        cache.opened(KEY, number, head)
        assert cache.get(KEY) is MISSING
    cache.put(KEY, None)  # known: none open; a PR opened since
    cache.opened(KEY, 7, "a" * 40)
    assert cache.get(KEY) is MISSING


def test_the_webhook_of_a_pr_the_promoter_merged_keeps_none_open() -> None:
    """The merge recorded "none open" before the SCM's webhook of it came in."""
    cache = PullRequestCache(max_age=60)
    cache.put(KEY, pr(7))
    cache.put(KEY, None)  # the promoter merged #7

    cache.ended(KEY, 7)

    assert cache.get(KEY) is None
    cache.ended(KEY, 6)  # but another PR's end says the cache was wrong
    assert cache.get(KEY) is MISSING
