"""One provider's subscription to its plugin's events (v1.1): each event checked, then applied.

An event goes through, in order: validation (``invalid``: dropped), the repositories
subscribed (``ignored``: about another one), the rate limit (``limited``: past
``BURST`` events at once and ``RATE`` a second; events are hints, the resync heals what
is dropped), the promoter's own writes (``own``: the echo of a write it made through the
plugin, dropped at no cost, see ``echoes``; held while that write waits for its answer),
and is then handed to the sink (``accepted``; ``error`` if the sink failed). Each result
is counted in ``promoter_plugin_events_total{provider,event,result}``; a dropped event is
logged at most once a minute per result, with a short sample (``accounting``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from promoter.config import Repository
from promoter.metrics import PLUGIN_EVENTS_TOTAL
from scm_plugins.external.accounting import LineAccount
from scm_plugins.external.echoes import OwnWrites, Settled
from scm_plugins.external.events import (
    EVENTS,
    Event,
    EventSink,
    PullRequestChanged,
    RefMoved,
    StatusChanged,
)
from scm_plugins.windows import TokenBucket

log = logging.getLogger("promoter.plugins")

BURST = 500
RATE = 50.0
"""Events a second applied once the burst is spent."""


def _problems(exc: ValidationError) -> str:
    """Where and what, for at most three errors: never the input, never a link."""
    found = [f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()]
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    return "; ".join(found[:3]) + more


def _text(params: Any) -> str:
    try:
        return json.dumps(params, separators=(",", ":"), default=str)
    except ValueError:
        return repr(params)


class Subscription:
    """The repositories a provider's plugin reports events for, and where they go."""

    def __init__(
        self,
        provider: str,
        repositories: tuple[Repository, ...],
        sink: EventSink,
        *,
        own: OwnWrites,
        account: LineAccount,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.repositories = repositories
        self.sink = sink
        self._names = {r.name for r in repositories}
        self._own = own
        self._account = account
        self._clock = clock
        self._lock = threading.Lock()
        self._bucket = TokenBucket(rate=RATE, capacity=BURST, now=clock())
        self.results: Counter[tuple[str, str]] = Counter()
        """(event, result) counted since the subscription: the conformance kit reads it."""

    def deliver(self, method: str, params: Any) -> str:
        """Check one notification and apply it, or say why not; its result. Never raises."""
        model = EVENTS.get(method)
        kind = method.removeprefix("events/") if model is not None else "unknown"
        try:
            if model is None:
                raise ValueError(f"no event {method[:100]}")
            event = model.model_validate(params)
        except (ValidationError, ValueError) as exc:
            words = _problems(exc) if isinstance(exc, ValidationError) else str(exc)
            self._dropped(kind, "invalid", "plugin event refused", params, error=words)
            return "invalid"
        if event.repository not in self._names:
            self._dropped(
                kind,
                "ignored",
                "plugin event about a repository it does not serve",
                params,
                level=logging.INFO,
            )
            return "ignored"
        with self._lock:
            now = self._clock()
            limited = self._bucket.wait(1, now) > 0
            if not limited:
                self._bucket.take(1, now)
        if limited:
            self._dropped(
                kind,
                "limited",
                "plugin events past the rate the promoter applies",
                params,
                per_second=RATE,
            )
            return "limited"
        mine = self._own.claim(event)
        if mine == "own":
            self._count(kind, "own")
            return "own"
        if mine == "held":
            return "held"
        return self._apply(kind, event)

    def settle(self, settled: Settled) -> None:
        """Apply what a write's answer did not recognise as its echo; count the rest own."""
        for event in settled.own:
            self._count(_kind(event), "own")
        for event in settled.applied:
            self._apply(_kind(event), event)

    def _apply(self, kind: str, event: Event) -> str:
        try:
            if isinstance(event, RefMoved):
                self.sink.ref_moved(
                    repository=event.repository,
                    ref=event.ref,
                    before=event.before,
                    after=event.after,
                )
            elif isinstance(event, StatusChanged):
                self.sink.status_changed(
                    repository=event.repository, sha=event.sha, status=event.status
                )
            else:
                self.sink.pull_request_changed(
                    repository=event.repository, pull_request=event.pull_request
                )
        except Exception:
            self._count(kind, "error")
            log.exception("plugin event failed", extra={"provider": self.provider, "event": kind})
            return "error"
        self._count(kind, "accepted")
        return "accepted"

    def _dropped(self, kind: str, result: str, message: str, params: Any, **fields: Any) -> None:
        self._count(kind, result)
        self._account.note(
            f"{result}_event",
            message,
            text=lambda: _text(params),
            metric=False,
            event=kind,
            **fields,
        )

    def _count(self, kind: str, result: str) -> None:
        PLUGIN_EVENTS_TOTAL.labels(self.provider, kind, result).inc()
        with self._lock:
            self.results[(kind, result)] += 1


def _kind(event: Event) -> str:
    if isinstance(event, RefMoved):
        return "refMoved"
    if isinstance(event, StatusChanged):
        return "statusChanged"
    assert isinstance(event, PullRequestChanged)
    return "pullRequestChanged"
