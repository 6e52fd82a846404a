"""The delivery keys' Bloom filter: never a false negative, about the error it was sized for;
and the delivery log that uses it answers as a set would."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhooks.deliveries.id_filter import IdFilter
from webhooks.deliveries.log import DeliveryLog
from webhooks.deliveries.store import delivery_key


@given(
    st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=300),
    st.integers(min_value=1, max_value=400),
)
def test_every_key_added_is_in_the_filter(keys: list[int], capacity: int) -> None:
    id_filter = IdFilter(capacity)
    id_filter.update(keys)
    assert all(key in id_filter for key in keys)
    assert id_filter.count == len(keys)
    assert id_filter.full is (len(keys) > capacity)


def test_an_empty_filter_holds_nothing() -> None:
    id_filter = IdFilter(10)
    assert delivery_key("github:a") not in id_filter
    assert "github:a" not in id_filter


def test_at_capacity_about_one_key_in_a_hundred_never_added_is_a_maybe() -> None:
    id_filter = IdFilter(20_000)
    id_filter.update(delivery_key(f"github:{n:08x}-added") for n in range(20_000))
    maybes = sum(delivery_key(f"github:{n:08x}-never") in id_filter for n in range(20_000))
    assert 50 <= maybes <= 400  # 1 % of 20,000 is 200


def test_a_filter_of_no_size_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity must be positive"):
        IdFilter(0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["record", "forget", "flush"]), st.integers(0, 40)),
        max_size=120,
    ),
    st.integers(min_value=1, max_value=6),
)
def test_the_log_answers_as_a_set_would_whatever_is_in_memory_or_the_filter(
    steps: list[tuple[str, int]], memory_limit: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = DeliveryLog(Path(directory) / "d.sqlite3", memory_limit=memory_limit, batch=3)
        model: set[str] = set()
        try:
            for action, n in steps:
                delivery_id = f"github:{n}"
                if action == "record":
                    assert log.record(delivery_id) is (delivery_id not in model)
                    model.add(delivery_id)
                elif action == "forget":
                    log.forget(delivery_id)
                    model.discard(delivery_id)
                else:
                    log.flush()
        finally:
            log.close()
        again = DeliveryLog(Path(directory) / "d.sqlite3", memory_limit=memory_limit)
        try:
            assert {f"github:{n}" for n in range(41) if not again.record(f"github:{n}")} == model
        finally:
            again.close()
