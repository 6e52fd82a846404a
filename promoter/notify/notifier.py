"""The observer that turns the executor's events into queued deliveries, per sink.

It also watches the strategies' views (``watch``): a failed gate sends ``gate.failed``,
an environment held up past ``blockedAfter`` sends ``promotion.blocked``. A sink with a
``digest`` period gets one message per period listing its events instead of one each;
what a digest holds is queued at the latest when the daemon stops.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from promoter.config.notifications import Notifications, Sink
from promoter.daemon import ActionEvent, StrategyView
from promoter.notify.events import Notification, dashboard_url, from_action
from promoter.notify.formats import render
from promoter.notify.queue import Delivery, DeliveryQueue
from promoter.notify.sender import Sender
from promoter.notify.watch import Watch

log = logging.getLogger("promoter.notify")

ViewsOf = Callable[[], Mapping[str, StrategyView]]
DIGEST_LINES = 50
"""Events a digest lists; it counts the rest."""


class Notifier:
    """Call it with each ``ActionEvent``; ``start``/``close`` run the sender thread."""

    def __init__(self, settings: Notifications, *, state_dir: Path, public_url: str) -> None:
        self.settings = settings
        self.public_url = public_url
        self.queue = DeliveryQueue(state_dir / "notifications" / "queue", size=settings.queue_size)
        self.sender = Sender(self.queue, list(settings.sinks), max_backoff=settings.max_backoff)
        self.watcher = Watch(settings.blocked_after)
        self._views: ViewsOf | None = None
        self._digests: dict[str, list[Notification]] = {}
        self._digest_due: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="promoter-watch", daemon=True)

    def __call__(self, event: ActionEvent) -> None:
        for notification in from_action(event, public_url=self.public_url):
            self.publish(notification)

    def watch(self, views: ViewsOf) -> None:
        """Read the strategies' views from ``views`` for failed gates and blocked ones."""
        self._views = views

    def publish(self, n: Notification, now: float | None = None) -> list[Delivery]:
        """Queue ``n`` for every sink that wants it (on disk before this returns); a
        digest sink's share waits for its period."""
        queued = []
        for sink in self.settings.sinks:
            if not sink.wants(n.event, n.strategy, n.environment):
                continue
            if sink.digest:
                self._collect(sink, n, time.monotonic() if now is None else now)
                continue
            queued.append(self._put(sink, n))
        if queued:
            self.sender.wake()
        return queued

    def _put(self, sink: Sink, n: Notification) -> Delivery:
        body = render(sink.format, n).decode()
        return self.queue.put(
            Delivery(id=f"{n.id}-{sink.name}", sink=sink.name, event=n.event, body=body)
        )

    def _collect(self, sink: Sink, n: Notification, now: float) -> None:
        with self._lock:
            self._digests.setdefault(sink.name, []).append(n)
            self._digest_due.setdefault(sink.name, now + float(sink.digest or 0))

    def flush_digests(self, now: float | None = None, *, every: bool = False) -> list[Delivery]:
        """Queue each digest whose period ended (``every``: all of them, at a stop)."""
        at = time.monotonic() if now is None else now
        with self._lock:
            due = [s for s, t in self._digest_due.items() if every or t <= at]
            batches = {s: self._digests.pop(s, []) for s in due}
            for s in due:
                self._digest_due.pop(s, None)
        queued = []
        for sink in self.settings.sinks:
            batch = batches.get(sink.name)
            if batch:
                queued.append(self._put(sink, digest(batch, self.public_url)))
        if queued:
            self.sender.wake()
        return queued

    def check(self, now: float | None = None) -> list[Notification]:
        """Scan the views once: ``gate.failed`` and ``promotion.blocked`` to tell."""
        if self._views is None:
            return []
        at = time.monotonic() if now is None else now
        told = [
            Notification(
                event=f.event,
                strategy=f.strategy,
                environment=f.environment,
                message=f.message,
                dry_sha=f.dry_sha,
                hydrated_sha=f.hydrated_sha,
                pr=f.pr,
                pr_url=f.pr_url if f.pr_url.startswith(("https://", "http://")) else "",
                url=dashboard_url(self.public_url, f.strategy),
            )
            for f in self.watcher.scan(self._views(), at)
        ]
        for n in told:
            self.publish(n, at)
        return told

    def _watch(self) -> None:
        tick = min(2.0, max(0.05, self.settings.blocked_after / 4))
        while not self._stop.wait(tick):
            try:
                self.check()
                self.flush_digests()
            except Exception:
                log.exception("notification watch failed")

    def start(self) -> None:
        self.sender.start()
        self._thread.start()
        log.info(
            "notifications started",
            extra={"sinks": len(self.settings.sinks), "pending": len(self.queue.pending())},
        )

    def close(self) -> None:
        self._stop.set()
        self.flush_digests(every=True)
        self.sender.close()


def digest(batch: list[Notification], public_url: str) -> Notification:
    """One notification listing ``batch`` (oldest first)."""
    lines = [
        f"{n.event} {n.strategy} {n.environment}"
        + (f" {n.dry_sha[:8]}" if n.dry_sha else "")
        + f": {n.message}"
        for n in batch[:DIGEST_LINES]
    ]
    if len(batch) > DIGEST_LINES:
        lines.append(f"and {len(batch) - DIGEST_LINES} more")
    strategies = sorted({n.strategy for n in batch})
    return Notification(
        event="digest",
        strategy=strategies[0] if len(strategies) == 1 else "promoter",
        environment="-",
        message=f"{len(batch)} events\n" + "\n".join(lines),
        url=dashboard_url(public_url, strategies[0]) if len(strategies) == 1 else public_url,
    )
