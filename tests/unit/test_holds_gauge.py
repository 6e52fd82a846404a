"""promoter_holds has a series only for an environment that holds something."""

from __future__ import annotations

from promoter.metrics import REGISTRY, held_gauge


def holds(strategy: str, environment: str) -> float | None:
    labels = {"strategy": strategy, "environment": environment}
    return REGISTRY.get_sample_value("promoter_holds", labels)


def test_an_environment_holding_nothing_has_no_series() -> None:
    held_gauge("gauge-app", "env/dev", 0)
    assert holds("gauge-app", "env/dev") is None


def test_a_series_shows_holds_and_goes_when_they_are_released() -> None:
    held_gauge("gauge-app", "env/prod", 2)
    assert holds("gauge-app", "env/prod") == 2.0
    held_gauge("gauge-app", "env/prod", 0)
    assert holds("gauge-app", "env/prod") is None
