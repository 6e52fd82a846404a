"""GitHub's rate limits as the fake enforces them, per token, with GitHub's answers.

The primary limit: ``primary`` requests per hour and token (GraphQL's ``/graphql`` has a
budget of its own, ``graphql_primary``, as GitHub keeps it apart from REST's), in a
window that starts with the window's first request and resets ``hour`` later
(``x-ratelimit-reset``, whole epoch seconds); a 304 is not charged; every answer carries
``x-ratelimit-limit``,
``-remaining``, ``-used``, ``-reset`` and ``-resource``; past the limit GitHub answers
403 with ``x-ratelimit-remaining: 0`` and its recorded body. The secondary limits
(docs.github.com, "Rate limits for the REST API"): at most ``concurrent`` requests in
flight, ``points_per_minute`` points in any minute (GET 1, other methods 5), and
content-creating requests at most ``content_per_minute`` a minute and
``content_per_hour`` an hour; past one, a 403 with ``retry-after`` and GitHub's
secondary-rate-limit body. ``FakeLimits.scaled(hour)`` runs time faster: every limit
keeps its count, every span shrinks by the same factor. Every refusal is kept in
``hits``. Thread-safe (a lock of its own: requests in flight are counted outside the
fake's lock).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .fake_state import Answer
from .genuine import Genuine

_REPO = r"^/repos/[^/]+/[^/]+"
CONTENT_CREATING = (
    ("POST", re.compile(_REPO + r"/pulls$")),
    ("PUT", re.compile(_REPO + r"/pulls/\d+/merge$")),
    ("POST", re.compile(_REPO + r"/pulls/\d+/(reviews|comments)$")),
    ("POST", re.compile(_REPO + r"/issues(/\d+/comments)?$")),
)
"""Requests that create content and notify people (octokit's throttling plugin's list)."""


GRAPHQL = "/graphql"
"""The route GraphQL is posted to (GitHub Enterprise Server's ``/api/graphql`` included)."""


@dataclass(frozen=True)
class FakeLimits:
    hour: float = 3600.0
    primary: int = 5000
    graphql_primary: int = 5000
    """GraphQL's own hourly budget (resource ``graphql``), apart from REST's (``core``)."""
    concurrent: int = 100
    points_per_minute: int = 900
    content_per_minute: int = 80
    content_per_hour: int = 500

    @property
    def minute(self) -> float:
        return self.hour / 60.0

    def scaled(self, hour: float) -> FakeLimits:
        return replace(self, hour=hour)


@dataclass
class Hit:
    """One request refused by a limit."""

    at: float
    limit: str
    """``primary``, ``concurrency``, ``points`` or ``content``."""
    method: str
    path: str


@dataclass
class _Usage:
    """One token's spending."""

    reset: int = 0
    used: int = 0
    in_flight: int = 0
    points: deque[tuple[float, int]] = field(default_factory=deque)
    points_total: int = 0
    """The sum of ``points`` (kept, not summed per request: a cold start at scale holds
    a hundred thousand entries in a minute)."""
    content: deque[float] = field(default_factory=deque)
    content_minute: deque[float] = field(default_factory=deque)

    def expire(self, now: float, limits: FakeLimits) -> None:
        while self.points and self.points[0][0] + limits.minute <= now:
            self.points_total -= self.points.popleft()[1]
        for log, span in ((self.content, limits.hour), (self.content_minute, limits.minute)):
            while log and log[0] + span <= now:
                log.popleft()


class RateLimits:
    def __init__(
        self, limits: FakeLimits, genuine: Genuine, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.limits = limits
        self._genuine = genuine
        self._clock = clock
        self._usage: dict[str, _Usage] = {}
        self._lock = threading.Lock()
        self._graphql: dict[str, _Usage] = {}
        self.hits: list[Hit] = []
        self.peak_in_flight = 0

    def enter(self, token: str, method: str, path: str) -> Answer | None:
        """A request arrives: GitHub's refusal, or None when every limit lets it through."""
        limits = self.limits
        with self._lock:
            now = self._clock()
            usage = self._usage.setdefault(token, _Usage())
            usage.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, usage.in_flight)
            spent, limit = self._resource(token, path)
            if now >= spent.reset:
                spent.reset, spent.used = math.ceil(now + limits.hour), 0
            if spent.used >= limit:
                resource = "graphql" if path == GRAPHQL else "core"
                answer = self._primary(spent, limit, resource)
                return self._refused(now, "primary", method, path, answer)
            if usage.in_flight > limits.concurrent:
                return self._refused(now, "concurrency", method, path, self._secondary(False))
            points = 1 if method in ("GET", "HEAD", "OPTIONS") else 5
            usage.expire(now, limits)
            if usage.points_total + points > limits.points_per_minute:
                return self._refused(now, "points", method, path, self._secondary(False))
            usage.points.append((now, points))
            usage.points_total += points
            if any(verb == method and route.match(path) for verb, route in CONTENT_CREATING):
                if (
                    len(usage.content_minute) >= limits.content_per_minute
                    or len(usage.content) >= limits.content_per_hour
                ):
                    return self._refused(now, "content", method, path, self._secondary(True))
                usage.content.append(now)
                usage.content_minute.append(now)
            return None

    def leave(self, token: str, status: int, path: str = "") -> dict[str, str]:
        """The request is answered: charge it (not a 304) to its resource (GraphQL's own,
        else REST's) and give that resource's rate-limit headers."""
        with self._lock:
            self._usage[token].in_flight -= 1
            spent, limit = self._resource(token, path)
            if status != 304:
                spent.used = min(spent.used + 1, limit)
            return self._headers(spent, limit, "graphql" if path == GRAPHQL else "core")

    def _resource(self, token: str, path: str) -> tuple[_Usage, int]:
        """The spending and the hourly limit ``path`` is charged to."""
        if path == GRAPHQL:
            return self._graphql.setdefault(token, _Usage()), self.limits.graphql_primary
        return self._usage.setdefault(token, _Usage()), self.limits.primary

    def remaining(self, token: str) -> int:
        with self._lock:
            usage = self._usage.get(token, _Usage())
            return self.limits.primary - usage.used

    def _headers(self, usage: _Usage, limit: int, resource: str) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(limit - usage.used),
            "x-ratelimit-reset": str(usage.reset),
            "x-ratelimit-used": str(usage.used),
            "x-ratelimit-resource": resource,
        }

    def _refused(self, now: float, limit: str, method: str, path: str, answer: Answer) -> Answer:
        self.hits.append(Hit(now, limit, method, path))
        return answer

    def _primary(self, usage: _Usage, limit: int, resource: str) -> Answer:
        _, _, body = self._genuine.error("SpecificExceptions.testRateLimitExceeded")
        return 403, {**self._headers(usage, limit, resource), "x-ratelimit-remaining": "0"}, body

    def _secondary(self, content: bool) -> Answer:
        name = "secondary-rate-limit" + (".content-creation" if content else "")
        retry_after = str(max(1, math.ceil(self.limits.minute)))
        return 403, {"retry-after": retry_after}, self._genuine.quoted(name)
