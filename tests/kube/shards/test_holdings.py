"""The shards a replica holds change on a Lease round's writer threads at once (and are
read by others): no update is lost, and the transitions counted agree with the shards
held.

CPython's lock on the interpreter makes one set operation atomic, and switches threads
only at a few points, so a race between two of them seldom shows. Here every access of
the holdings' sets and counts yields the processor (``yielding``), as a busy machine or
a free-threaded interpreter may at any point: the holdings' own lock must keep each
change that reads before it writes whole.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from promoter.kube.shards.coordinator import WRITERS
from promoter.kube.shards.holdings import Holdings

SHARDS = [f"shard-{n:03d}" for n in range(6)]
CALLS = 1000
"""Takes, lets go and lapses per thread."""


class YieldingSet(set[str]):
    """A set that lets another thread run at every access."""

    def __contains__(self, item: object) -> bool:
        found = super().__contains__(item)
        time.sleep(0)
        return found

    def add(self, item: str) -> None:
        time.sleep(0)
        super().add(item)

    def discard(self, item: str) -> None:
        time.sleep(0)
        super().discard(item)


class YieldingCounter(Counter[str]):
    """A count that lets another thread run between reading a count and writing it."""

    def __getitem__(self, key: str) -> int:
        value = super().__getitem__(key)
        time.sleep(0)
        return value


class YieldingDict(dict[str, Any]):
    """A map that lets another thread run between a look and what follows it."""

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        time.sleep(0)
        return found


def yielding() -> Holdings:
    holdings = Holdings()
    holdings._held = YieldingSet()
    holdings._ever = YieldingSet()
    holdings._revoked_at = YieldingDict()
    holdings._transitions = YieldingCounter()
    return holdings


def churn(holdings: Holdings, seed: int, start: threading.Barrier) -> tuple[int, int, int]:
    """Take, let go of and lapse random shards; how many of each changed what is held."""
    rng = random.Random(seed)
    took = lost = lapsed = 0
    start.wait()
    for _ in range(CALLS):
        shard = rng.choice(SHARDS)
        draw = rng.random()
        if draw < 0.45:
            took += holdings.acquire(shard)
        elif draw < 0.9:
            lost += holdings.lose(shard, taken=True)
        else:
            lapsed += len(holdings.lapse(set(SHARDS) - {shard}))
    return took, lost, lapsed


def test_concurrent_takes_and_let_goes_lose_no_update_and_agree_with_their_counts() -> None:
    holdings = yielding()
    start = threading.Barrier(WRITERS)
    with ThreadPoolExecutor(WRITERS) as pool:
        done = list(pool.map(lambda seed: churn(holdings, seed, start), range(WRITERS)))
    took, lost, lapsed = (sum(counts) for counts in zip(*done, strict=True))
    assert took > 0 and lost > 0 and lapsed > 0
    counted = holdings.transitions()
    assert (counted["acquired"], counted["lost"], counted["lapsed"]) == (took, lost, lapsed)
    assert len(holdings.held()) == took - lost - lapsed


def test_a_shard_revoked_from_every_writer_at_once_begins_its_hand_over_once() -> None:
    holdings = yielding()
    shards = [f"shard-{n:03d}" for n in range(100)]
    start = threading.Barrier(WRITERS)

    def revoke(_: int) -> list[str]:
        start.wait()
        return [shard for shard in shards if holdings.revoke(shard, 1.0)[0]]

    with ThreadPoolExecutor(WRITERS) as pool:
        began = Counter(shard for found in pool.map(revoke, range(WRITERS)) for shard in found)
    assert [shard for shard in shards if began[shard] != 1] == []
