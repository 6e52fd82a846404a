"""The request path shared by both SCMs: cap, verify, parse, de-duplicate, dispatch, answer.

One ``Receiver`` per provider, a plain ASGI app (the hot path skips starlette's
Request/Response objects, and ``promoter.http.direct`` its middleware). It does no git
and no SCM call: the answer goes back as soon as the keys are enqueued, the status
cache is updated and the delivery id is persisted (``webhooks.deliveries.durable``).
Every outcome is counted in ``promoter_webhook_requests_total`` and logged with the
delivery id, never with the secret or the body: routine outcomes at debug level,
refusals at info (invalid) or warning (unauthorized, too large).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import Counter
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from promoter.logs import log_context
from promoter.metrics import WEBHOOK_DURATION, WEBHOOK_REQUESTS_TOTAL
from webhooks.body import BadLength, BodyTooLarge, ClientGone, read_capped
from webhooks.deliveries.durable import Durable
from webhooks.deliveries.log import DeliveryLog
from webhooks.dispatch import Dispatcher
from webhooks.events import Event, Ping
from webhooks.payload import PayloadError

log = logging.getLogger("promoter.webhooks")

INLINE_LIMIT = 256 * 1024
"""Bodies larger than this are verified and parsed in a worker thread, off the event loop."""


def header_map(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """Request headers by lower-case name (ASGI gives them so), as latin-1 text; the first
    of repeated names wins."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}


class Provider(Protocol):
    """What the receiver needs from one SCM's module."""

    name: str

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool: ...

    def event_name(self, headers: Mapping[str, str]) -> str: ...

    def event_label(self, event: str, *, trusted: bool) -> str: ...

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None: ...

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event: ...


def _json(result: str, reason: str = "") -> bytes:
    data = {"result": result, "reason": reason} if reason else {"result": result}
    return json.dumps(data, separators=(",", ":")).encode("ascii")


_UNAUTHORIZED = _json("unauthorized")
_TOO_LARGE = _json("too_large")
_DUPLICATE = _json("duplicate")
_ACCEPTED = _json("accepted")
_PONG = _json("pong")
_ERROR = _json("error")
_MESSAGES = {"accepted": "webhook accepted", "ignored": "webhook ignored"}
_CONTENT_TYPE = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")


class Receiver:
    """The ASGI app of one provider, mounted at ``POST /webhooks/<provider>``."""

    def __init__(
        self,
        provider: Provider,
        *,
        dispatcher: Dispatcher,
        deliveries: DeliveryLog,
        max_body: int,
    ) -> None:
        self.provider = provider
        self.max_body = max_body
        self._dispatcher = dispatcher
        self._deliveries = deliveries
        self._durable = Durable(deliveries)
        self._duration = WEBHOOK_DURATION.labels(provider.name)
        self._counters: dict[tuple[str, str], Counter] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = header_map(scope["headers"])
        with log_context(delivery_id=self.provider.delivery_id(request, None)):
            result, status, label, body = await self._handle(scope, receive, request)
        headers = [_CONTENT_TYPE, (b"content-length", b"%d" % len(body))]
        if result == "too_large":
            headers.append(_CLOSE)  # the rest is never read
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        self._count(label, result)
        self._duration.observe(time.perf_counter() - started)

    def _count(self, label: str, result: str) -> None:
        counter = self._counters.get((label, result))
        if counter is None:
            counter = WEBHOOK_REQUESTS_TOTAL.labels(self.provider.name, label, result)
            self._counters[(label, result)] = counter
        counter.inc()

    def _fields(self, label: str, headers: Mapping[str, str], **more: Any) -> dict[str, Any]:
        """What a log line about a delivery says: the delivery id as the SCM's UI shows it
        (every other line logged while the delivery is handled has it from the log context)."""
        return {
            "provider": self.provider.name,
            "event": label,
            "delivery_id": self.provider.delivery_id(headers, None),
            **more,
        }

    async def _handle(
        self, scope: Scope, receive: Receive, headers: dict[str, str]
    ) -> tuple[str, int, str, bytes]:
        """Read the body (capped), verify and parse it, refusing what fails; ``_apply`` does
        the rest. Returns the result, the HTTP status, the event label and the body to answer."""
        provider = self.provider
        event = provider.event_name(headers)
        label = provider.event_label(event, trusted=False)
        try:
            body = await read_capped(receive, headers.get("content-length"), self.max_body)
        except BodyTooLarge:
            log.warning(
                "webhook body too large", extra=self._fields(label, headers, limit=self.max_body)
            )
            return "too_large", 413, label, _TOO_LARGE
        except BadLength:
            return self._invalid(label, headers, "bad content-length")
        except ClientGone:
            return self._invalid(label, headers, "client went away")

        offload = len(body) > INLINE_LIMIT
        if offload:
            verified = await run_in_threadpool(provider.authenticate, headers, body)
        else:
            verified = provider.authenticate(headers, body)
        if not verified:
            client = scope.get("client")
            fields = self._fields(label, headers, client=client and client[0])
            log.warning("webhook unauthorized", extra=fields)
            return "unauthorized", 401, label, _UNAUTHORIZED

        label = provider.event_label(event, trusted=True)
        try:
            if offload:
                parsed = await run_in_threadpool(provider.parse, event, headers, body)
            else:
                parsed = provider.parse(event, headers, body)
        except PayloadError as exc:
            return self._invalid(label, headers, str(exc))

        return await self._apply(parsed, label, headers, body)

    async def _apply(
        self, parsed: Event, label: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[str, int, str, bytes]:
        """De-duplicate a verified, parsed delivery, dispatch it and say what to answer."""
        delivery = None if isinstance(parsed, Ping) else self.provider.delivery_id(headers, body)
        if delivery is not None and not self._first(delivery):
            if log.isEnabledFor(logging.DEBUG):
                log.debug("webhook duplicate", extra=self._fields(label, headers))
            return "duplicate", 202, label, _DUPLICATE
        try:
            applied = self._dispatcher.apply(parsed)
        except Exception:  # a bug of ours, not the sender's: let a redelivery try again
            log.error("webhook dispatch failed", extra=self._fields(label, headers), exc_info=True)
            if delivery is not None:
                self._forget(delivery)
            return "error", 503, label, _ERROR
        if applied.result == "ping":
            log.info("webhook ping", extra=self._fields(label, headers))
            return "accepted", 200, label, _PONG
        if delivery is not None:
            await self._stored(label, headers)
        if log.isEnabledFor(logging.DEBUG):
            fields = self._fields(label, headers, reason=applied.reason)
            fields["repository"] = ",".join(applied.repositories)
            fields["keys"] = ",".join(sorted(applied.keys))
            log.debug(_MESSAGES[applied.result], extra=fields)
        if applied.result == "ignored":
            return "ignored", 202, label, _json("ignored", applied.reason)
        return "accepted", 202, label, _ACCEPTED

    async def _stored(self, label: str, headers: Mapping[str, str]) -> None:
        """Wait until the delivery's id is committed: answered, it is never lost to a crash.

        A log that cannot write lets the delivery through, as when it cannot be read.
        """
        if not await self._durable.stored():
            log.warning("webhook delivery log unavailable", extra=self._fields(label, headers))

    def _invalid(
        self, label: str, headers: Mapping[str, str], reason: str
    ) -> tuple[str, int, str, bytes]:
        log.info("webhook invalid", extra=self._fields(label, headers, reason=reason))
        return "invalid", 400, label, _json("invalid", reason)

    def _first(self, delivery: str) -> bool:
        """True unless the delivery was already handled; a broken log lets deliveries through."""
        try:
            return self._deliveries.record(f"{self.provider.name}:{delivery}")
        except sqlite3.Error:
            log.warning("webhook delivery log unavailable", exc_info=True)
            return True

    def _forget(self, delivery: str) -> None:
        try:
            self._deliveries.forget(f"{self.provider.name}:{delivery}")
        except sqlite3.Error:
            log.warning("webhook delivery log unavailable", exc_info=True)
