"""DORA figures of each strategy for the API, ``/metrics`` and the dashboard's charts.

Reads the ledger from the strategy's last snapshot and the dry commits' times from the
dry branch's history (through the ``Views`` port); the arithmetic is in
``promoter.engine.reverts.dora``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from promoter.engine import DoraFigures, dora
from promoter.http.ports import Views

log = logging.getLogger("promoter.dora")

HISTORY_LIMIT = 500


def strategy_dora(views: Views, name: str, *, now: datetime | None = None) -> list[DoraFigures]:
    """One ``DoraFigures`` per environment of ``name`` (empty before its first reconcile)."""
    view = views.view(name)
    if view is None or view.snapshot is None:
        return []
    try:
        history = views.dry_history(name, limit=HISTORY_LIMIT)
    except Exception:  # figures without lead times beat no figures
        log.warning("dry history unavailable", extra={"strategy": name})
        history = []
    times = {c.sha: c.date for c in history if c.date is not None}
    at = now or datetime.now(UTC)
    return [
        dora(env.branch, env.ledger, commit_times=times, now=at)
        for env in view.snapshot.environments
    ]


def dora_json(name: str, figures: list[DoraFigures]) -> dict[str, Any]:
    return {
        "strategy": name,
        "environments": [f.model_dump(mode="json", by_alias=True) for f in figures],
    }


class DoraCollector(Collector):
    """Prometheus gauges of the 30-day window, computed at scrape time from every
    strategy's figures (they go down as days leave the window: gauges, never counters;
    the counters to take rates of are ``promoter.daemon.dora_counters``')."""

    def __init__(self, views: Views) -> None:
        self.views = views

    def collect(self) -> Iterator[Any]:
        labels = ["strategy", "environment"]
        families = {
            name: GaugeMetricFamily(f"promoter_dora_window_{name}", text, labels=labels)
            for name, text in WINDOW.items()
        }
        for strategy in self.views.strategies():
            for f in strategy_dora(self.views, strategy.name):
                values = [strategy.name, f.environment]
                for name, value in _window(f).items():
                    if value is not None:
                        families[name].add_metric(values, value)
        yield from families.values()


WINDOW = {
    "deployments": "Deployments in the last 30 days.",
    "failures": "Reverted deployments in the last 30 days.",
    "deployment_frequency_per_day": "Deployments a day, last 30 days.",
    "change_failure_rate": "Reverted / deployed, last 30 days.",
    "lead_time_median_seconds": "Median dry commit to healthy, last 30 days.",
    "time_to_restore_median_seconds": "Median revert opened to healthy, last 30 days.",
}
"""The gauges ``promoter_dora_window_*`` (the last 30 days)."""


def _window(f: DoraFigures) -> dict[str, float | None]:
    return {
        "deployments": float(f.deployments),
        "failures": float(f.failures),
        "deployment_frequency_per_day": f.deployment_frequency_per_day,
        "change_failure_rate": f.change_failure_rate,
        "lead_time_median_seconds": f.lead_time_median_seconds,
        "time_to_restore_median_seconds": f.time_to_restore_median_seconds,
    }
