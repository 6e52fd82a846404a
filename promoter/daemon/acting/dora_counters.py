"""The DORA counters of ``/metrics``: deployments, failures and restores as they happen.

True counters (they only go up, from 0 at each start), from which Prometheus computes
rates over any window (``rate(promoter_dora_deployments_total[1d])``); the 30-day window
values are gauges computed at scrape time (``promoter.http.api.dora_view``).
"""

from __future__ import annotations

from promoter.daemon.acting.events import ActionEvent
from promoter.metrics import DORA_DEPLOYMENTS_TOTAL, DORA_FAILURES_TOTAL, DORA_RESTORES_TOTAL

COUNTERS = {
    "merged": DORA_DEPLOYMENTS_TOTAL,
    "revert": DORA_FAILURES_TOTAL,
    "reverted": DORA_RESTORES_TOTAL,
}
"""Which executor event each counter counts."""


def count(event: ActionEvent) -> None:
    """An observer of the executor: counts the events that are DORA's."""
    counter = COUNTERS.get(event.kind)
    if counter is not None:
        counter.inc(event.strategy, event.environment)
