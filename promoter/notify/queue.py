"""The deliveries not yet made, one JSON file each in ``<state>/notifications/queue``.

Written atomically (temporary file, then rename) before anyone is told it is queued,
deleted once the receiver answered 2xx, so a restart loses nothing (and tries every
delivery again at once, oldest first). Bounded: when
full, the oldest delivery is dropped (and logged). Thread-safe.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger("promoter.notify")


@dataclass(frozen=True)
class Delivery:
    id: str
    sink: str
    event: str
    body: str
    attempts: int = 0
    next_at: float = 0.0
    """When to try next (``time.time()``)."""
    seq: int = 0


class DeliveryQueue:
    def __init__(self, root: Path, *, size: int) -> None:
        self.root = root
        self.size = size
        self.dead = root.parent / "dead"
        root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._items: dict[str, Delivery] = {}
        for path in sorted(root.glob("*.json")):
            try:
                item = Delivery(**json.loads(path.read_text()))
            except (ValueError, TypeError):
                log.warning("unreadable delivery set aside", extra={"file": path.name})
                path.rename(path.with_suffix(".bad"))
                continue
            # A restart tries everything again at once, oldest first.
            self._items[item.id] = Delivery(**{**asdict(item), "next_at": 0.0})
        start = max((d.seq for d in self._items.values()), default=0) + 1
        self._seq = itertools.count(start)

    def _path(self, item: Delivery) -> Path:
        return self.root / f"{item.seq:012d}-{item.id}.json"

    def _write(self, item: Delivery) -> None:
        path = self._path(item)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(item)))
        os.replace(tmp, path)

    def put(self, item: Delivery) -> Delivery:
        with self._lock:
            item = Delivery(**{**asdict(item), "seq": next(self._seq)})
            while len(self._items) >= self.size:
                oldest = min(self._items.values(), key=lambda d: d.seq)
                self._remove(oldest)
                log.warning(
                    "notification queue full: oldest dropped",
                    extra={"sink": oldest.sink, "event": oldest.event},
                )
            self._write(item)
            self._items[item.id] = item
            return item

    def due(self, now: float | None = None) -> list[Delivery]:
        """Deliveries whose time has come, oldest first."""
        at = time.time() if now is None else now
        with self._lock:
            return sorted((d for d in self._items.values() if d.next_at <= at), key=_seq)

    def pending(self) -> list[Delivery]:
        with self._lock:
            return sorted(self._items.values(), key=_seq)

    def done(self, item: Delivery) -> None:
        with self._lock:
            self._remove(item)

    def retry(self, item: Delivery, *, at: float) -> Delivery:
        with self._lock:
            again = Delivery(**{**asdict(item), "attempts": item.attempts + 1, "next_at": at})
            if item.id in self._items:
                self._write(again)
                self._items[item.id] = again
            return again

    def give_up(self, item: Delivery) -> None:
        """Move ``item`` to ``dead/`` for a person to look at."""
        with self._lock:
            self.dead.mkdir(parents=True, exist_ok=True)
            path = self._path(item)
            if path.exists():
                os.replace(path, self.dead / path.name)
            self._items.pop(item.id, None)

    def _remove(self, item: Delivery) -> None:
        self._path(item).unlink(missing_ok=True)
        self._items.pop(item.id, None)


def _seq(item: Delivery) -> int:
    return item.seq
