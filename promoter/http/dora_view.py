"""DORA figures of each strategy for the API, ``/metrics`` and the dashboard's charts.

Reads the ledger from the strategy's last snapshot and the dry commits' times from the
dry branch's history (through the ``Views`` port); the arithmetic is in
``promoter.engine.dora``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from promoter.engine import DoraFigures, dora
from promoter.http.ports import Views

log = logging.getLogger("promoter.dora")

HISTORY_LIMIT = 500
BUCKETS = (60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0, 7 * 86400.0)


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
    """Prometheus families computed at scrape time from every strategy's figures."""

    def __init__(self, views: Views) -> None:
        self.views = views

    def collect(self) -> Iterator[Any]:
        labels = ["strategy", "environment"]
        deployments = CounterMetricFamily(
            "promoter_dora_deployments", "Deployments in the last 30 days.", labels=labels
        )
        failures = CounterMetricFamily(
            "promoter_dora_failures", "Reverted deployments in the last 30 days.", labels=labels
        )
        rate = GaugeMetricFamily(
            "promoter_dora_change_failure_rate", "Reverted / deployed, 30 days.", labels=labels
        )
        lead = HistogramMetricFamily(
            "promoter_dora_lead_time_seconds", "Dry commit to healthy, 30 days.", labels=labels
        )
        restore = HistogramMetricFamily(
            "promoter_dora_time_to_restore_seconds", "Revert opened to healthy.", labels=labels
        )
        for strategy in self.views.strategies():
            for f in strategy_dora(self.views, strategy.name):
                values = [strategy.name, f.environment]
                deployments.add_metric(values, f.deployments)
                failures.add_metric(values, f.failures)
                if f.change_failure_rate is not None:
                    rate.add_metric(values, f.change_failure_rate)
                lead.add_metric(values, _buckets(f.lead_times_seconds), sum(f.lead_times_seconds))
                restore.add_metric(
                    values, _buckets(f.restore_times_seconds), sum(f.restore_times_seconds)
                )
        yield from (deployments, failures, rate, lead, restore)


def _buckets(samples: tuple[float, ...]) -> list[tuple[str, float]]:
    out = [(str(bound), float(sum(1 for s in samples if s <= bound))) for bound in BUCKETS]
    return [*out, ("+Inf", float(len(samples)))]
