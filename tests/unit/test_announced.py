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
