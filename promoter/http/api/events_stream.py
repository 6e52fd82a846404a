"""Server-sent events for the dashboard: ``GET /events`` says when a strategy changed.

The stream compares each strategy's JSON view (its reconcile time left out) every
``interval`` seconds and sends ``event: change`` with the strategy's name when it
differs (read in the thread pool; a view's digest is made again only when the view was
replaced). Every stream ends after ``lifetime`` seconds (browsers reconnect by
themselves), so a daemon shutting down never waits on an open tab; the event id is a
digest of every view, and a reconnect whose ``Last-Event-ID`` differs is told at once.
A strategy's page carries its own view's digest of the moment it was made (``page_id``)
and its first stream starts from it: a change between the page and the stream is not
missed. (The overview carries none: a digest of every view is a second of work at
10,000 strategies, the first time; it is refreshed on the next change anywhere.)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from promoter.config import PromotionStrategy
from promoter.http.api.views import strategy_json
from promoter.http.ports import Views

Seen = dict[str, tuple[tuple[object, ...], str]]
"""Per strategy: what its digest was made of (objects, compared by identity), and the digest."""


def fingerprints(
    views: Views, readable: Callable[[str], bool] = bool, seen: Seen | None = None
) -> dict[str, str]:
    """A digest of each strategy's view (of those ``readable``), without the time it was
    last reconciled. With ``seen``, a digest is made again only when the view's parts are
    other objects than last time (a reconcile replaces them): with thousands of
    strategies, a tick compares identities instead of serialising every view."""
    return {
        strategy.name: _fingerprint(views, strategy, seen)
        for strategy in views.strategies()
        if readable(strategy.name)
    }


def _fingerprint(views: Views, strategy: PromotionStrategy, seen: Seen | None) -> str:
    view = views.view(strategy.name)
    parts: tuple[object, ...] = (strategy,)
    if view is not None:
        parts = (strategy, view.snapshot, view.decision, view.error, view.waiting)
    kept = seen.get(strategy.name) if seen is not None else None
    if kept is not None and _same(kept[0], parts):
        return kept[1]
    detail = strategy_json(strategy, view)
    detail.pop("reconciledAt", None)
    text = json.dumps(detail, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    if seen is not None:
        seen[strategy.name] = (parts, digest)
    return digest


def _same(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """The same objects (texts: equal) as before."""
    return len(before) == len(now) and all(
        a is b or (isinstance(a, str) and a == b) for a, b in zip(before, now, strict=True)
    )


PAGE = "page:"
"""How a ``Last-Event-ID`` made by a strategy's page begins (``page_id``)."""


def _digest(prints: dict[str, str]) -> str:
    text = json.dumps(prints, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _event(names: list[str], event_id: str) -> str:
    return f"id: {event_id}\nevent: change\ndata: {json.dumps({'strategies': names})}\n\n"


class EventStream:
    """The ``/events`` endpoint over ``views``."""

    def __init__(self, views: Views, *, interval: float = 0.5, lifetime: float = 10.0) -> None:
        self.views = views
        self.interval = interval
        self.lifetime = lifetime
        self.seen: Seen = {}

    def page_id(self, name: str) -> str:
        """An id for strategy ``name``'s page to start its stream from (``page:NAME:DIGEST``,
        its own view's digest now, one view's worth of work): a stream opened with it
        says at once when that view changed since (between the page's making and the
        stream's start)."""
        strategy = self.views.strategy(name)
        digest = _fingerprint(self.views, strategy, self.seen) if strategy is not None else ""
        return f"{PAGE}{name}:{digest}"

    async def endpoint(
        self, request: Request, *, readable: Callable[[str], bool] = bool
    ) -> StreamingResponse:
        """The stream of the strategies ``readable`` says the caller may read."""
        last_id = request.headers.get("last-event-id", "")
        return StreamingResponse(
            self._events(request, last_id, readable),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _events(
        self, request: Request, last_id: str, readable: Callable[[str], bool]
    ) -> AsyncIterator[str]:
        seen = await run_in_threadpool(fingerprints, self.views, readable, self.seen)
        yield "retry: 500\n\n"
        if last_id.startswith(PAGE):
            name, _, digest = last_id.removeprefix(PAGE).rpartition(":")
            changed = [name] if name in seen and seen[name] != digest else []
        else:
            changed = sorted(seen) if last_id and last_id != _digest(seen) else []
        if changed:
            yield _event(changed, _digest(seen))
        else:
            yield f"id: {_digest(seen)}\n\n"
        deadline = time.monotonic() + self.lifetime
        while time.monotonic() < deadline:
            await asyncio.sleep(self.interval)
            if await request.is_disconnected():
                return
            now = await run_in_threadpool(fingerprints, self.views, readable, self.seen)
            changed = sorted(name for name, value in now.items() if seen.get(name) != value)
            seen = now
            if changed:
                yield _event(changed, _digest(now))
