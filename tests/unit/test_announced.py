"""The call budgets' helper: a read is early only when its commit's webhook came after it."""

from __future__ import annotations

from tests.announced import Announcements


def test_a_read_is_early_only_before_its_commits_announcement() -> None:
    answered = [5]
    seen = Announcements(lambda: answered[0])
    seen.heard("a")
    answered[0] = 9
    seen.heard("a")  # a second webhook for the same commit moves nothing
    reads = [(3, "a"), (4, "a"), (5, "a"), (7, "a"), (2, "never-announced")]
    assert seen.early(reads) == {3: "a", 4: "a"}


def test_a_read_begun_before_the_announcement_is_early_even_when_answered_after() -> None:
    answered = [5]
    seen = Announcements(lambda: answered[0])
    with seen.reading("a"):  # the daemon's cache had no entry: it asks the SCM...
        seen.heard("a")  # ...while the webhook comes in
        answered[0] = 7  # its two calls are answered after
    with seen.reading("a"):  # announced: a read now is one the budget counts
        answered[0] = 8
    reads = [(4, "a"), (5, "a"), (6, "a"), (7, "a")]
    assert seen.early(reads) == {4: "a", 5: "a", 6: "a"}
