"""Delivers the queue's notifications over HTTP from one thread, with capped backoff.

A 2xx answer ends a delivery; anything else (an error, a timeout, a 5xx or a 4xx) is
retried after ``min(cap, 2 ** attempts)`` seconds, or ``Retry-After`` when given, until
the sink's ``maxAttempts``, then set aside in ``dead/``. Neither the URL nor the
secret is ever logged.
"""

from __future__ import annotations

import logging
import threading
import time

import httpx

from promoter.config.notifications import Sink
from promoter.metrics import NOTIFICATIONS_TOTAL
from promoter.notify.formats import CONTENT_TYPES, SIGNATURE_HEADER, sign
from promoter.notify.queue import Delivery, DeliveryQueue

log = logging.getLogger("promoter.notify")


def send_once(sink: Sink, delivery_id: str, event: str, body: bytes) -> httpx.Response:
    """POST ``body`` to ``sink`` once, signed when it has a secret."""
    headers = {
        "Content-Type": CONTENT_TYPES[sink.format],
        "User-Agent": "promoter-notify",
        "X-Promoter-Delivery": delivery_id,
        "X-Promoter-Event": event,
    }
    if sink.secret is not None:
        headers[SIGNATURE_HEADER] = sign(sink.secret.resolve(), body)
    return httpx.post(sink.target(), content=body, headers=headers, timeout=sink.timeout)


def _retry_after(response: httpx.Response | None) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class Sender:
    def __init__(
        self, queue: DeliveryQueue, sinks: list[Sink], *, max_backoff: float, tick: float = 0.2
    ) -> None:
        self.queue = queue
        self.sinks = {s.name: s for s in sinks}
        self.max_backoff = max_backoff
        self.tick = tick
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="promoter-notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            for item in self.queue.due():
                if self._stop.is_set():
                    return
                self.deliver(item)
            self._wake.wait(self.tick)
            self._wake.clear()

    def deliver(self, item: Delivery) -> bool:
        """One attempt at ``item``; True when the receiver took it."""
        sink = self.sinks.get(item.sink)
        if sink is None:  # removed from the configuration since it was queued
            log.warning("notification for an unknown sink dropped", extra={"sink": item.sink})
            self.queue.done(item)
            return False
        response: httpx.Response | None = None
        try:
            response = send_once(sink, item.id, item.event, item.body.encode())
            ok = response.is_success
            outcome = str(response.status_code)
        except (httpx.HTTPError, OSError) as exc:
            ok, outcome = False, type(exc).__name__
        fields = {"sink": sink.name, "event": item.event, "attempt": item.attempts + 1}
        if ok:
            NOTIFICATIONS_TOTAL.labels(sink.name, "delivered").inc()
            self.queue.done(item)
            log.info("notification delivered", extra=fields)
            return True
        if item.attempts + 1 >= sink.max_attempts:
            NOTIFICATIONS_TOTAL.labels(sink.name, "dropped").inc()
            self.queue.give_up(item)
            log.error("notification given up", extra={**fields, "outcome": outcome})
            return False
        delay = _retry_after(response) or min(self.max_backoff, 2.0**item.attempts)
        NOTIFICATIONS_TOTAL.labels(sink.name, "retried").inc()
        self.queue.retry(item, at=time.time() + delay)
        log.warning("notification failed", extra={**fields, "outcome": outcome, "retry": delay})
        return False
