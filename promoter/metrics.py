"""Prometheus metrics of the daemon, in one registry per process.

Every metric the promoter exports is declared here, so that /metrics documents itself.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Collection, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)


class SeriesCounter(Collector):
    """A counter labelled by strategy and environment (a series for each), exported
    exactly as ``prometheus_client.Counter`` exports one (``_total`` and ``_created``),
    kept as a count and a creation time per label set: about 180 bytes a series, where a
    ``Counter`` child is an object with a lock and a value of its own (about 570). A
    daemon that has promoted each of 30,000 strategies through four environments holds
    240,000 such series in two counters. Thread-safe."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        registry: CollectorRegistry,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = labelnames
        self._series: dict[tuple[str, ...], list[float]] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        """Add ``amount`` to the series of ``labels`` (one value per label name)."""
        if len(labels) != len(self._labelnames):
            raise ValueError(f"{self._name} takes labels {self._labelnames}, not {labels}")
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            series = self._series.get(labels)
            if series is None:
                self._series[labels] = [amount, time.time()]
            else:
                series[0] += amount

    def forget(self, strategies: Collection[str]) -> int:
        """Drop the series of ``strategies`` (by the ``strategy`` label); how many went."""
        at = self._labelnames.index("strategy")
        with self._lock:
            gone = [labels for labels in self._series if labels[at] in strategies]
            for labels in gone:
                del self._series[labels]
        return len(gone)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        with self._lock:
            series = [(labels, value, created) for labels, (value, created) in self._series.items()]
        stamped = getattr(prometheus_metrics, "_use_created", True)  # disable_created_metrics()
        for labels, value, created in series:
            family.add_metric(labels, value, created=created if stamped else None)
        yield family

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)


RECONCILE_TOTAL = Counter(
    "promoter_reconcile_total", "Reconciles by result.", ["result"], registry=REGISTRY
)
RECONCILE_DURATION = Histogram(
    "promoter_reconcile_duration_seconds",
    "Wall time of one reconcile.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
PROMOTIONS_TOTAL = SeriesCounter(
    "promoter_promotions_total",
    "Promotion PRs merged.",
    ("strategy", "environment"),
    registry=REGISTRY,
)
SCM_CALLS_TOTAL = Counter(
    "promoter_scm_calls_total",
    "SCM API calls by provider, operation and outcome.",
    ["provider", "operation", "outcome"],
    registry=REGISTRY,
)
SCM_CALL_DURATION = Histogram(
    "promoter_scm_call_duration_seconds",
    "Wall time of one SCM call by provider and operation (a slow plugin shows here).",
    ["provider", "operation"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
PLUGIN_EVENTS_TOTAL = Counter(
    "promoter_plugin_events_total",
    "Events pushed by out-of-process SCM plugins, by provider, event and result.",
    ["provider", "event", "result"],
    registry=REGISTRY,
)
PLUGIN_LINES_TOTAL = Counter(
    "promoter_plugin_lines_total",
    "Lines of out-of-process SCM plugins the promoter could not use, by provider and kind "
    "(malformed, unknown_id, late_answer, early_event, stderr_dropped).",
    ["provider", "kind"],
    registry=REGISTRY,
)
SCM_RATE_LIMIT_REMAINING = Gauge(
    "promoter_scm_rate_limit_remaining",
    "Rate-limit budget left, as the SCM last reported it.",
    ["provider"],
    registry=REGISTRY,
)
STATUS_WRITES_CAPPED = Counter(
    "promoter_status_writes_capped_total",
    "The promoter's own status writes held back: more on one commit in a minute than the"
    " bound (a write loop), by repository.",
    ["repository"],
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge("promoter_queue_depth", "Keys waiting in the work queue.", registry=REGISTRY)
GIT_FETCHES_TOTAL = Counter(
    "promoter_git_fetches_total", "git fetches by repository.", ["repository"], registry=REGISTRY
)
GIT_LS_REMOTE_TOTAL = Counter(
    "promoter_git_ls_remote_total",
    "git ls-remote runs (cheap checks of whether a fetch is needed) by repository.",
    ["repository"],
    registry=REGISTRY,
)
WATCHDOG_OVERDUE_TOTAL = Counter(
    "promoter_watchdog_overdue_total",
    "Locks held and git commands run past their deadline (promoter.watchdog), by kind"
    " (lock, git) and what.",
    ["kind", "what"],
    registry=REGISTRY,
)
WEBHOOK_REQUESTS_TOTAL = Counter(
    "promoter_webhook_requests_total",
    "Webhook deliveries by provider, event and result.",
    ["provider", "event", "result"],
    registry=REGISTRY,
)
WEBHOOK_DURATION = Histogram(
    "promoter_webhook_duration_seconds",
    "Time to answer one webhook delivery.",
    ["provider"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25),
    registry=REGISTRY,
)
REVERTS_TOTAL = SeriesCounter(
    "promoter_reverts_total",
    "Revert PRs opened.",
    ("strategy", "environment", "trigger"),
    registry=REGISTRY,
)
QUEUE_RACES_TOTAL = SeriesCounter(
    "promoter_merge_queue_races_total",
    "Promotion PRs a merge queue merged before the promoter could take them out (frozen,"
    " held, pinned elsewhere, a newer head, a gate that failed).",
    ("strategy", "environment"),
    registry=REGISTRY,
)
HOLDS = Gauge(
    "promoter_holds",
    "Dry SHAs held per environment.",
    ["strategy", "environment"],
    registry=REGISTRY,
)
DORA_DEPLOYMENTS_TOTAL = SeriesCounter(
    "promoter_dora_deployments_total",
    "Changes merged into an environment (promotions and break-glass promotions).",
    ("strategy", "environment"),
    registry=REGISTRY,
)
DORA_FAILURES_TOTAL = SeriesCounter(
    "promoter_dora_failures_total",
    "Deployments that failed: reverts opened.",
    ("strategy", "environment"),
    registry=REGISTRY,
)
DORA_RESTORES_TOTAL = SeriesCounter(
    "promoter_dora_restores_total",
    "Environments restored: reverts merged.",
    ("strategy", "environment"),
    registry=REGISTRY,
)
AUDIT_DROPPED_TOTAL = Counter(
    "promoter_audit_entries_dropped_total",
    "Audit entries not kept: past a client's bound for the day (client), or past the"
    " refusals a repository's day keeps in its notes (notes).",
    ["outcome", "bound"],
    registry=REGISTRY,
)
NOTIFICATIONS_TOTAL = Counter(
    "promoter_notifications_total",
    "Notification delivery attempts by outcome (delivered, retried, dropped).",
    ["sink", "outcome"],
    registry=REGISTRY,
)


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    """The current value of one sample (0.0 when absent); for tests and benchmarks."""
    value = REGISTRY.get_sample_value(name, labels or {})
    return value if value is not None else 0.0


_HELD: set[tuple[str, str]] = set()
"""The environments that have a ``promoter_holds`` series."""


def held_gauge(strategy: str, environment: str, holds: int) -> None:
    """``promoter_holds`` of one environment; none is kept for an environment holding
    nothing (at 10,000 strategies a sample each would cost 40,000 series, and looking for
    one that is not there, every reconcile, a raised ``KeyError`` each)."""
    key = (strategy, environment)
    if holds:
        HOLDS.labels(strategy, environment).set(holds)
        _HELD.add(key)
        return
    if key in _HELD:
        _HELD.discard(key)
        with contextlib.suppress(KeyError):
            HOLDS.remove(strategy, environment)


def forget_strategies(strategies: Collection[str]) -> int:
    """Drop every series of ``strategies``, gone from the configuration (a deleted
    PromotionStrategy): a daemon whose strategies come and go (one per preview
    environment) would otherwise export them until it restarts. How many series went."""
    names = set(strategies)
    if not names:
        return 0
    gone = sum(
        counter.forget(names)
        for counter in (
            PROMOTIONS_TOTAL,
            REVERTS_TOTAL,
            QUEUE_RACES_TOTAL,
            DORA_DEPLOYMENTS_TOTAL,
            DORA_FAILURES_TOTAL,
            DORA_RESTORES_TOTAL,
        )
    )
    for key in [k for k in list(_HELD) if k[0] in names]:
        _HELD.discard(key)
        with contextlib.suppress(KeyError):
            HOLDS.remove(*key)
            gone += 1
    return gone
