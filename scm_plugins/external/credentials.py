"""Git credentials a plugin gave, reused until shortly before their stated expiry.

git asks for credentials before every command that reaches the remote; a plugin call
for each would make a slow plugin the bottleneck of every fetch and push. An answer with
``expiresAt`` (``promoter.scm/v1.1``) is reused until ``MARGIN`` before it; one without
(every v1 plugin's) for ``DEFAULT_TTL``. A plugin restart forgets them all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

DEFAULT_TTL = 60.0
"""Seconds an answer without ``expiresAt`` is reused."""
MARGIN = 60.0
"""Credentials are asked for again this long before their stated expiry."""


class CredentialCache:
    """Per repository: the last git environment, and until when it may be reused."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[dict[str, str], float]] = {}

    def get(self, repository: str) -> dict[str, str] | None:
        """The environment to reuse, or None when there is none or it is due."""
        with self._lock:
            entry = self._entries.get(repository)
            if entry is None or self._clock() >= entry[1]:
                return None
            return dict(entry[0])

    def put(self, repository: str, env: Mapping[str, str], expires_at: datetime | None) -> None:
        """Remember ``env``: until ``MARGIN`` before ``expires_at``, or for ``DEFAULT_TTL``."""
        if expires_at is None:
            ttl = DEFAULT_TTL
        else:
            when = expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=UTC)
            ttl = (when - self._now()).total_seconds() - MARGIN
        with self._lock:
            if ttl > 0:
                self._entries[repository] = (dict(env), self._clock() + ttl)
            else:
                self._entries.pop(repository, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
