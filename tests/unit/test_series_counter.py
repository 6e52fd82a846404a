"""The counters with a series per strategy and environment (``metrics.SeriesCounter``):
exported exactly as ``prometheus_client.Counter`` exports them, exact under threads,
and a fraction of a ``Counter`` child's memory per series."""

from __future__ import annotations

import re
import threading
import tracemalloc

import pytest
from prometheus_client import (
    CollectorRegistry,
    Counter,
    disable_created_metrics,
    enable_created_metrics,
    generate_latest,
)
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

from promoter.metrics import PROMOTIONS_TOTAL, SeriesCounter, sample

LABELS = ("strategy", "environment")
CREATED = re.compile(rb"(_created\{[^}]*\}) [0-9.e+]+")


def pair() -> tuple[CollectorRegistry, CollectorRegistry, SeriesCounter, Counter]:
    ours, theirs = CollectorRegistry(auto_describe=True), CollectorRegistry(auto_describe=True)
    series = SeriesCounter("promoter_promotions_total", "Promotion PRs merged.", LABELS, ours)
    counter = Counter("promoter_promotions_total", "Promotion PRs merged.", LABELS, registry=theirs)
    return ours, theirs, series, counter


def test_the_exposition_is_prometheus_clients_own() -> None:
    ours, theirs, series, counter = pair()
    assert generate_latest(ours) == generate_latest(theirs)  # no series yet: help and type
    for strategy, environment, amount in [
        ("guestbook", "environment/dev", 1.0),
        ("guestbook", "environment/prod", 1.0),
        ("guestbook", "environment/dev", 2.0),
        ('a"quoted\\name', "environment/dev", 1.0),
    ]:
        series.inc(strategy, environment, amount=amount)
        counter.labels(strategy, environment).inc(amount)
    for exposition in (generate_latest, openmetrics):
        mine, expected = exposition(ours), exposition(theirs)
        assert CREATED.sub(rb"\1 T", mine) == CREATED.sub(rb"\1 T", expected)
        assert len(CREATED.findall(mine)) == 3


def test_without_created_series_as_prometheus_client_is_told() -> None:
    ours, theirs, series, counter = pair()
    series.inc("guestbook", "environment/dev")
    counter.labels("guestbook", "environment/dev").inc()
    disable_created_metrics()
    try:
        assert generate_latest(ours) == generate_latest(theirs)
        assert b"_created" not in generate_latest(ours)
    finally:
        enable_created_metrics()


def test_every_increment_from_many_threads_is_counted() -> None:
    registry = CollectorRegistry()
    series = SeriesCounter("things_total", "Things.", LABELS, registry)

    def work(n: int) -> None:
        for i in range(2000):
            series.inc(f"app-{i % 7}", f"env-{n % 2}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = sum(
        registry.get_sample_value("things_total", {"strategy": f"app-{i}", "environment": e}) or 0
        for i in range(7)
        for e in ("env-0", "env-1")
    )
    assert total == 8 * 2000


def test_wrong_labels_or_a_decrease_are_refused() -> None:
    series = SeriesCounter("things_total", "Things.", LABELS, CollectorRegistry())
    with pytest.raises(ValueError, match="takes labels"):
        series.inc("only-one")
    with pytest.raises(ValueError, match="only goes up"):
        series.inc("app", "env", amount=-1)


def test_the_promotions_counter_costs_a_fraction_of_a_counter_child_per_series() -> None:
    names = [(f"mem-{i}", "environment/dev") for i in range(2000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for strategy, environment in names:
            PROMOTIONS_TOTAL.inc(strategy, environment)
        per_series = (tracemalloc.get_traced_memory()[0] - before) / len(names)
    finally:
        tracemalloc.stop()
    assert per_series < 300, per_series  # a Counter child: about 570 bytes
    assert (
        sample("promoter_promotions_total", {"strategy": "mem-7", "environment": "environment/dev"})
        == 1
    )


def test_forget_drops_the_series_of_the_strategies_named_and_no_other() -> None:
    registry = CollectorRegistry(auto_describe=True)
    reverts = SeriesCounter(
        "promoter_reverts_total",
        "Revert PRs opened.",
        ("strategy", "environment", "trigger"),
        registry,
    )
    for strategy, trigger in [("gone", "auto"), ("gone", "manual"), ("kept", "auto")]:
        reverts.inc(strategy, "environment/prod", trigger)
    assert reverts.forget({"gone", "never-seen"}) == 2
    assert reverts.forget({"gone"}) == 0
    text = generate_latest(registry).decode()
    assert 'strategy="gone"' not in text
    assert (
        'promoter_reverts_total{environment="environment/prod",strategy="kept",trigger="auto"} 1.0'
        in text
    )
