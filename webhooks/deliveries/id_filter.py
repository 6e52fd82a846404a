"""A Bloom filter over delivery keys: "certainly not seen" without a disk read.

The delivery log keeps the newest ids in memory; the older ones of its retention window
are only in SQLite, as 64-bit keys (``webhooks.deliveries.store.delivery_key``). A new
delivery is, by far, the common case, and without this filter every one of them would
cost a SQLite lookup once the window holds more ids than memory does. The filter answers
``key in filter`` with no false negative: False means the key was never added; True
means it may have been (about 1 % of the keys never added, at ``capacity``), and the
caller asks SQLite.

It is a blocked Bloom filter: a key sets 6 bits in one 64-bit word, so that adding or
asking costs one word's read and write and a few shifts of the key, which is itself a
hash (its low 24 bits choose the word, the next 36 the bits). At 12 bits a key it errs
on about 1 % of the keys never added, as a classic filter does at 10.

Keys cannot be taken out of a Bloom filter: the log builds a new one from SQLite once
more than ``capacity`` keys were added (the pruned ones are then left out).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable

BITS_PER_KEY = 12
MIN_WORDS = 128
MAX_WORDS = 1 << 24
"""The word is chosen by 24 bits of the key: up to 128 MB, 80 million keys."""
_MASK64 = (1 << 64) - 1
_WORD = (1 << 24) - 1


def _bits(key: int) -> int:
    """The 6 bits a key sets in its word, from bits 24 to 59 of the key."""
    v = (key & _MASK64) >> 24
    return (
        1 << (v & 63)
        | 1 << (v >> 6 & 63)
        | 1 << (v >> 12 & 63)
        | 1 << (v >> 18 & 63)
        | 1 << (v >> 24 & 63)
        | 1 << (v >> 30 & 63)
    )


class IdFilter:
    """``add(key)``, then ``key in filter`` is True; sized for ``capacity`` keys."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._words = min(MAX_WORDS, max(MIN_WORDS, math.ceil(capacity * BITS_PER_KEY / 64)))
        self._array = array("Q", bytes(8 * self._words))
        self.count = 0
        """Keys added, repeats included."""

    @property
    def full(self) -> bool:
        """More keys added than the filter was sized for: its error is growing."""
        return self.count > self.capacity

    def add(self, key: int) -> None:
        self._array[(key & _WORD) % self._words] |= _bits(key)
        self.count += 1

    def update(self, keys: Iterable[int]) -> None:
        for key in keys:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, int):
            return False
        bits = _bits(key)
        return self._array[(key & _WORD) % self._words] & bits == bits
