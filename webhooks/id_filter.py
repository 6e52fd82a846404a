"""A Bloom filter over delivery ids: "certainly not seen" without a disk read.

The delivery log keeps the newest ids in memory; the older ones of its retention window
are only in SQLite. A new delivery is, by far, the common case, and without this filter
every one of them would cost a SQLite lookup once the window holds more ids than memory
does. The filter answers ``id in filter`` with no false negative: False means the id was
never added; True means it may have been (about ``error`` of the ids never added answer
True at ``capacity``), and the caller asks SQLite.

Ids cannot be taken out of a Bloom filter: the log builds a new one from SQLite once
more than ``capacity`` ids were added (the pruned ones are then left out).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MIN_BITS = 8192
_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


class IdFilter:
    """``add(id)``, then ``id in filter`` is True; sized for ``capacity`` ids."""

    def __init__(self, capacity: int, *, error: float = 0.01) -> None:
        if capacity < 1 or not 0.0 < error < 1.0:
            raise ValueError("capacity must be positive and error within (0, 1)")
        self.capacity = capacity
        bits = max(MIN_BITS, math.ceil(-capacity * math.log(error) / math.log(2) ** 2))
        bits = min(bits, _MASK32)  # the positions are 32-bit
        self._bits = bits
        self._hashes = max(1, round(-math.log2(error)))  # 7 at 1 %; more bits only lower it
        self._array = bytearray((bits + 7) // 8)
        self.count = 0
        """Ids added, repeats included."""

    @property
    def full(self) -> bool:
        """More ids added than the filter was sized for: its error is growing."""
        return self.count > self.capacity

    def add(self, delivery_id: str) -> None:
        array = self._array
        for position in self._positions(delivery_id):
            array[position >> 3] |= 1 << (position & 7)
        self.count += 1

    def update(self, ids: Iterable[str]) -> None:
        for delivery_id in ids:
            self.add(delivery_id)

    def __contains__(self, delivery_id: object) -> bool:
        if not isinstance(delivery_id, str):
            return False
        array = self._array
        for position in self._positions(delivery_id):
            if not array[position >> 3] >> (position & 7) & 1:
                return False
        return True

    def _positions(self, delivery_id: str) -> list[int]:
        """The bits of an id: double hashing (Kirsch and Mitzenmacher) of its ``hash``, which
        the log's dict lookups of the same string have computed and cached already. The
        filter lives in one process, so the per-process hash seed does not matter."""
        value = hash(delivery_id) & _MASK64
        first, step, bits = value & _MASK32, (value >> 32) | 1, self._bits
        return [(first + i * step) % bits for i in range(self._hashes)]
