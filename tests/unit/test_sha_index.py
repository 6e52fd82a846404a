"""The SHA index: which strategies track a hydrated SHA, as reconciles replace their SHAs."""

from __future__ import annotations

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
