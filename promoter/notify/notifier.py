"""The observer that turns the executor's events into queued deliveries, per sink.

It also notices promotions left open: a promotion PR still open ``blockedAfter`` after
it was opened sends ``promotion.blocked`` once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from promoter.config.notifications import Notifications
from promoter.daemon.events import ActionEvent
from promoter.notify.events import Notification, from_action
from promoter.notify.formats import render
from promoter.notify.queue import Delivery, DeliveryQueue
from promoter.notify.sender import Sender

log = logging.getLogger("promoter.notify")


@dataclass
class _Open:
    opened: float
    event: ActionEvent
    told: bool = False


class Notifier:
    """Call it with each ``ActionEvent``; ``start``/``close`` run the sender thread."""

    def __init__(self, settings: Notifications, *, state_dir: Path, public_url: str) -> None:
        self.settings = settings
        self.public_url = public_url
        self.queue = DeliveryQueue(state_dir / "notifications" / "queue", size=settings.queue_size)
        self.sender = Sender(self.queue, list(settings.sinks), max_backoff=settings.max_backoff)
        self._open: dict[tuple[str, str], _Open] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._watch_blocked, daemon=True)

    def __call__(self, event: ActionEvent) -> None:
        self._track(event)
        notification = from_action(event, public_url=self.public_url)
        if notification is not None:
            self.publish(notification)

    def publish(self, n: Notification) -> list[Delivery]:
        """Queue ``n`` for every sink that wants it (on disk before this returns)."""
        queued = [
            self.queue.put(
                Delivery(
                    id=f"{n.id}-{sink.name}",
                    sink=sink.name,
                    event=n.event,
                    body=render(sink.format, n).decode(),
                )
            )
            for sink in self.settings.sinks
            if sink.wants(n.event, n.strategy, n.environment)
        ]
        if queued:
            self.sender.wake()
        return queued

    def _track(self, event: ActionEvent) -> None:
        key = (event.strategy, event.environment)
        with self._lock:
            if event.kind == "opened":
                self._open[key] = _Open(time.monotonic(), event)
            elif event.kind in ("merged", "closed"):
                self._open.pop(key, None)

    def check_blocked(self, now: float | None = None) -> list[Notification]:
        """``promotion.blocked`` for every promotion open longer than ``blockedAfter``."""
        at = time.monotonic() if now is None else now
        found = []
        with self._lock:
            for item in self._open.values():
                if not item.told and at - item.opened >= self.settings.blocked_after:
                    item.told = True
                    e = item.event
                    found.append(
                        Notification(
                            event="promotion.blocked",
                            strategy=e.strategy,
                            environment=e.environment,
                            message=f"promotion open for {int(at - item.opened)}s: {e.message}",
                            sha=e.sha,
                            pr=e.pr,
                            url=f"{self.public_url.rstrip('/')}/dashboard/{e.strategy}",
                        )
                    )
        for n in found:
            self.publish(n)
        return found

    def _watch_blocked(self) -> None:
        while not self._stop.wait(min(30.0, max(0.05, self.settings.blocked_after / 4))):
            self.check_blocked()

    def start(self) -> None:
        self.sender.start()
        self._watch.start()
        log.info(
            "notifications started",
            extra={"sinks": len(self.settings.sinks), "pending": len(self.queue.pending())},
        )

    def close(self) -> None:
        self._stop.set()
        self.sender.close()
