"""What a replica taking a shard over reads first (strategies annotated lately: their
owner could not be reached) and last (strategies at rest)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from promoter.kube.resources.refresh import recently_refreshed
from promoter.kube.resources.specs import REFRESH_ANNOTATION
from promoter.kube.resources.status import quiet


def strategy(name: str, stamp: str | None) -> dict[str, Any]:
    annotations = {REFRESH_ANNOTATION: stamp} if stamp is not None else {}
    return {"metadata": {"namespace": "team", "name": name, "annotations": annotations}}


def test_only_strategies_annotated_within_the_window_are_read_first() -> None:
    now = datetime.now(UTC)

    def stamp(seconds_ago: float) -> str:
        moment = now - timedelta(seconds=seconds_ago)
        return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")

    objects = [
        strategy("fresh", stamp(2)),
        strategy("old", stamp(120)),
        strategy("never", None),
        strategy("garbage", "yesterday-ish"),
    ]
    assert recently_refreshed(objects, within=45) == {"team.fresh"}


def test_a_strategy_is_at_rest_only_when_its_status_says_every_environment_is_up_to_date() -> None:
    ready = {"type": "Ready", "status": "True"}
    up = {"state": "up-to-date"}
    status = {"observedGeneration": 2, "conditions": [ready], "environments": [up, up]}
    at_rest = {"metadata": {"generation": 2}, "status": status}
    assert quiet(at_rest)
    blocked = {**status, "environments": [up, {"state": "blocked"}]}
    assert not quiet({"metadata": {"generation": 2}, "status": blocked})
    assert not quiet({"metadata": {"generation": 3}, "status": status})  # an edit not seen yet
    failing = {**status, "conditions": [{"type": "Ready", "status": "False"}]}
    assert not quiet({"metadata": {"generation": 2}, "status": failing})
    assert not quiet({"metadata": {"generation": 1}})  # never reconciled
