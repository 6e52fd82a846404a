"""The promoter's own statuses coming back (by webhook or by a read), in the SCM's own
words: recognised by commit, key and phase, never by the words, and written no more often
than the bound on writes per commit and minute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from promoter.models import CommitStatus, Phase
from promoter.state import StatusCache
from promoter.state.write_bound import WriteBound

SHA = "a" * 40
AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WRITTEN = CommitStatus(
    key="promoter/gates",
    phase=Phase.SUCCESS,
    description="every gate passes: lint; waiting for a person to merge",
    url="https://promoter.example/strategies/guestbook",
    source="promoter",
    updated_at=AT,
)


def echo(phase: Phase = Phase.SUCCESS, words: str = "success (pipeline #12)") -> CommitStatus:
    """The status as GitLab's Pipeline Hook hands it back: its own words, a later time."""
    return CommitStatus(
        key="promoter/gates",
        phase=phase,
        description=words,
        url="https://gitlab.example/p/-/pipelines/12",
        source="gitlab/status",
        updated_at=AT + timedelta(seconds=2),
        revision=12,
    )


def test_an_echo_by_webhook_in_other_words_is_the_promoters_own_and_changes_nothing() -> None:
    cache = StatusCache()
    cache.store("gitops", SHA, [])
    cache.wrote("gitops", SHA, WRITTEN)
    assert cache.put("gitops", SHA, echo()) is False  # nothing to wake anyone for
    [shown] = cache.get("gitops", SHA) or []
    assert (shown.description, shown.url, shown.source) == (
        WRITTEN.description,
        WRITTEN.url,
        "promoter",
    )


def test_an_echo_read_from_the_scm_in_other_words_is_the_promoters_own() -> None:
    cache = StatusCache()
    cache.wrote("gitops", SHA, WRITTEN)
    cache.forget("gitops", SHA)  # the resync drops the read: it comes from the SCM again
    cache.store("gitops", SHA, [echo(words="every gate passes: li…")])
    [shown] = cache.get("gitops", SHA) or []
    assert shown.description == WRITTEN.description


def test_a_status_of_another_phase_is_someone_elses_and_is_kept_as_said() -> None:
    cache = StatusCache()
    cache.store("gitops", SHA, [])
    cache.wrote("gitops", SHA, WRITTEN)
    forged = echo(Phase.FAILURE, "failed (pipeline #13)")
    assert cache.put("gitops", SHA, forged) is True
    [shown] = cache.get("gitops", SHA) or []
    assert (shown.phase, shown.description) == (Phase.FAILURE, "failed (pipeline #13)")


def test_what_was_written_is_let_go_with_its_commit_and_with_its_repository() -> None:
    cache = StatusCache()
    cache.wrote("gitops", SHA, WRITTEN)
    cache.release("gitops", SHA)
    cache.store("gitops", SHA, [echo()])
    assert [s.description for s in cache.get("gitops", SHA) or []] == ["success (pipeline #12)"]
    cache.wrote("gitops", SHA, WRITTEN)
    cache.forget_repositories({"gitops"})  # another replica may write there now
    cache.store("gitops", SHA, [echo()])
    assert [s.description for s in cache.get("gitops", SHA) or []] == ["success (pipeline #12)"]


def test_writes_on_one_commit_are_bounded_per_minute_and_the_bound_frees_with_time() -> None:
    now = [0.0]
    bound = WriteBound(per_commit=3, span=60.0, clock=lambda: now[0])
    assert [bound.admit("gitops", SHA) for _ in range(3)] == [None, None, None]
    assert bound.admit("gitops", SHA) == 60.0  # the fourth waits for the first to age out
    assert bound.admit("gitops", "b" * 40) is None  # another commit has its own bound
    now[0] = 45.0
    assert bound.admit("gitops", SHA) == 15.0
    now[0] = 60.0
    assert bound.admit("gitops", SHA) is None
    now[0] = 500.0
    assert bound.admit("gitops", "c" * 40) is None
    assert len(bound) == 1  # the commits written no more are let go
