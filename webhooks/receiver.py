"""The request path shared by both SCMs: cap, verify, parse, de-duplicate, dispatch, answer.

One ``Receiver`` per provider, a plain ASGI app (the hot path skips starlette's
Request/Response objects). It does no git and no SCM call: the answer goes back as
soon as the keys are enqueued and the status cache is updated. Every outcome is
counted in ``promoter_webhook_requests_total`` and logged with the delivery id,
never with the secret or the body: routine outcomes at debug level, refusals at
info (invalid) or warning (unauthorized, too large).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import Counter
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from promoter.metrics import WEBHOOK_DURATION, WEBHOOK_REQUESTS_TOTAL
from webhooks.body import BadLength, BodyTooLarge, ClientGone, read_capped
from webhooks.deliveries import DeliveryLog
from webhooks.dispatch import Dispatcher
from webhooks.events import Event, Ping
from webhooks.payload import PayloadError

log = logging.getLogger("promoter.webhooks")

INLINE_LIMIT = 256 * 1024
"""Bodies larger than this are verified and parsed in a worker thread, off the event loop."""


class RawHeaders(Mapping[str, str]):
    """Request headers by lower-case name, decoded only when read; the first of repeats wins."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        self._raw = dict(reversed(list(raw)))

    def __getitem__(self, name: str) -> str:
        return self._raw[name.encode("latin-1")].decode("latin-1")

    def get(self, name: str, default: Any = None) -> Any:
        value = self._raw.get(name.encode("latin-1"))
        return default if value is None else value.decode("latin-1")

    def __iter__(self) -> Iterator[str]:
        return (k.decode("latin-1") for k in self._raw)

    def __len__(self) -> int:
        return len(self._raw)


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


class Receiver:
    """The ASGI app of one provider, mounted at ``POST /webhooks/<provider>``."""

    def __init__(
        self,
        provider: Provider,
        *,
        dispatcher: Dispatcher,
        deliveries: DeliveryLog | None,
        max_body: int,
    ) -> None:
        self.provider = provider
        self.max_body = max_body
        self._dispatcher = dispatcher
        self._deliveries = deliveries
        self._duration = WEBHOOK_DURATION.labels(provider.name)
        self._counters: dict[tuple[str, str], Counter] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = RawHeaders(scope["headers"])
        result, status, label, body = await self._handle(scope, receive, headers)
        response_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
        ]
        if result == "too_large":
            response_headers.append((b"connection", b"close"))  # the rest is never read
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})
        self._count(label, result)
        self._duration.observe(time.perf_counter() - started)

    def _count(self, label: str, result: str) -> None:
        counter = self._counters.get((label, result))
        if counter is None:
            counter = WEBHOOK_REQUESTS_TOTAL.labels(self.provider.name, label, result)
            self._counters[(label, result)] = counter
        counter.inc()

    async def _handle(
        self, scope: Scope, receive: Receive, headers: RawHeaders
    ) -> tuple[str, int, str, bytes]:
        provider = self.provider
        event = provider.event_name(headers)
        label = provider.event_label(event, trusted=False)
        fields: dict[str, Any] = {
            "provider": provider.name,
            "event": label,
            "delivery": provider.delivery_id(headers, None),  # as the SCM's UI shows it
        }
        try:
            body = await read_capped(receive, headers.get("content-length"), self.max_body)
        except BodyTooLarge:
            log.warning("webhook body too large", extra={**fields, "limit": self.max_body})
            return "too_large", 413, label, _TOO_LARGE
        except BadLength:
            return self._invalid(label, fields, "bad content-length")
        except ClientGone:
            return self._invalid(label, fields, "client went away")

        delivery = provider.delivery_id(headers, body)  # the de-duplication key
        offload = len(body) > INLINE_LIMIT
        if offload:
            verified = await run_in_threadpool(provider.authenticate, headers, body)
        else:
            verified = provider.authenticate(headers, body)
        if not verified:
            client = scope.get("client")
            log.warning("webhook unauthorized", extra={**fields, "client": client and client[0]})
            return "unauthorized", 401, label, _UNAUTHORIZED

        label = fields["event"] = provider.event_label(event, trusted=True)
        try:
            if offload:
                parsed = await run_in_threadpool(provider.parse, event, headers, body)
            else:
                parsed = provider.parse(event, headers, body)
        except PayloadError as exc:
            return self._invalid(label, fields, str(exc))

        if not isinstance(parsed, Ping) and delivery is not None and not self._first(delivery):
            log.debug("webhook duplicate", extra=fields)
            return "duplicate", 202, label, _DUPLICATE
        try:
            applied = self._dispatcher.apply(parsed)
        except Exception:  # a bug of ours, not the sender's: let a redelivery try again
            log.error("webhook dispatch failed", extra=fields, exc_info=True)
            if delivery is not None:
                self._forget(delivery)
            return "error", 503, label, _ERROR
        if applied.result == "ping":
            log.info("webhook ping", extra=fields)
            return "accepted", 200, label, _PONG
        if log.isEnabledFor(logging.DEBUG):
            fields["repository"] = ",".join(applied.repositories)
            fields["keys"] = ",".join(sorted(applied.keys))
            fields["reason"] = applied.reason
            log.debug(_MESSAGES[applied.result], extra=fields)
        if applied.result == "ignored":
            return "ignored", 202, label, _json("ignored", applied.reason)
        return "accepted", 202, label, _ACCEPTED

    def _invalid(
        self, label: str, fields: dict[str, Any], reason: str
    ) -> tuple[str, int, str, bytes]:
        log.info("webhook invalid", extra={**fields, "reason": reason})
        return "invalid", 400, label, _json("invalid", reason)

    def _first(self, delivery: str) -> bool:
        """True unless the delivery was already handled; a broken log lets deliveries through."""
        if self._deliveries is None:
            return True
        try:
            return self._deliveries.record(f"{self.provider.name}:{delivery}")
        except sqlite3.Error:
            log.warning("webhook delivery log unavailable", exc_info=True)
            return True

    def _forget(self, delivery: str) -> None:
        if self._deliveries is None:
            return
        try:
            self._deliveries.forget(f"{self.provider.name}:{delivery}")
        except sqlite3.Error:
            log.warning("webhook delivery log unavailable", exc_info=True)
