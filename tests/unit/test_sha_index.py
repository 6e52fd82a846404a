"""The SHA index: which strategies track a hydrated SHA, as reconciles replace their SHAs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promoter.state.tracking import ShaIndex


def test_a_sha_tracked_by_two_strategies_is_kept_for_the_one_still_tracking_it() -> None:
    index = ShaIndex()
    index.track("app-1", ["a" * 40, "b" * 40])
    index.track("app-2", ["b" * 40])
    assert index.strategies_for("b" * 40) == {"app-1", "app-2"}
    index.track("app-1", ["c" * 40])
    assert index.strategies_for("a" * 40) == set()
    assert index.strategies_for("b" * 40) == {"app-2"}
    assert index.strategies_for("C" * 40) == {"app-1"}
    index.track("app-2", [])
    assert index.strategies_for("b" * 40) == set()


def test_what_strategies_for_returns_is_the_callers_own() -> None:
    index = ShaIndex()
    index.track("app-1", ["a" * 40])
    index.strategies_for("a" * 40).add("intruder")
    assert index.strategies_for("a" * 40) == {"app-1"}
    index.track("app-2", ["a" * 40])
    index.track("app-1", [])
    assert index.strategies_for("a" * 40) == {"app-2"}


def test_track_returns_the_shas_no_strategy_tracks_any_more() -> None:
    index = ShaIndex()
    assert index.track("app-1", ["a" * 40, "b" * 40]) == set()
    assert index.track("app-2", ["b" * 40]) == set()
    assert index.track("app-1", ["c" * 40]) == {"a" * 40}  # b is still app-2's
    assert index.track("app-1", ["c" * 40]) == set()
    assert index.track("app-2", []) == {"b" * 40}
    assert index.track("app-1", []) == {"c" * 40}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["app-1", "app-2", "app-3"]),
            st.sets(st.sampled_from([c * 40 for c in "abcdef"])),
        ),
        max_size=30,
    )
)
def test_what_track_releases_is_exactly_what_was_tracked_and_is_no_more(
    calls: list[tuple[str, set[str]]],
) -> None:
    index = ShaIndex()
    tracked: dict[str, set[str]] = {}
    for strategy, shas in calls:
        before = set().union(*tracked.values())
        tracked[strategy] = shas
        after = set().union(*tracked.values())
        assert index.track(strategy, shas) == before - after
        for sha in after:
            assert index.strategies_for(sha) == {s for s, held in tracked.items() if sha in held}


def test_a_strategy_forgotten_leaves_nothing_and_releases_the_shas_only_it_tracked() -> None:
    index = ShaIndex()
    index.track("team.a", ["aaa", "shared"])
    index.track("team.b", ["shared"])
    assert index.forget("team.a") == {"aaa"}
    assert index.strategies_for("shared") == {"team.b"}
    assert index.strategies_for("aaa") == set()
    assert "team.a" not in index._by_strategy and "team.a" not in index._alone
    assert index.forget("team.a") == set()  # twice is nothing
    assert index.track("team.a", ["aaa"]) == set()  # and it can be tracked again
    assert index.strategies_for("aaa") == {"team.a"}
