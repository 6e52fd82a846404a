"""A plugin's health from what it says: silence makes it hung, an outage it reports pauses
its provider, and neither is taken for the other.

Only silence counts toward a hung plugin: ``HUNG_AFTER_TIMEOUTS`` calls in a row that got
no answer within their time limit (``CallTimedOut``); the host then kills the process
and the next call starts it again. Any answer, an error too, resets that count.

An ``unavailable`` or ``temporary`` answer (``ScmOutage``) says that the SCM is out, not
the plugin: the process is kept, and the provider's calls pause instead, for the
``retryAfter`` the plugin gave or, without one, not after a first such answer, then
``FIRST_PAUSE`` doubling to ``MAX_PAUSE`` while they go on. During the pause every call
fails at once, without reaching the plugin, with the plugin's last words and the time
left (the reconcile is retried no sooner). The first other answer ends the outage. Its
start and its end are each logged once, with the provider and the plugin.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from promoter.errors import ScmOutage

log = logging.getLogger("promoter.plugins")

HUNG_AFTER_TIMEOUTS = 3
FIRST_PAUSE = 0.5
MAX_PAUSE = 30.0


class PluginHealth:
    """One provider's plugin: time-outs in a row, and the outage it reported. Thread-safe."""

    def __init__(
        self, provider: str, plugin: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.provider = provider
        self.plugin = plugin
        self._clock = clock
        self._lock = threading.Lock()
        self._timeouts = 0
        self._outages = 0
        """``unavailable`` / ``temporary`` answers in a row."""
        self._began = 0.0
        self._until = -math.inf
        self._words = ""

    @property
    def in_outage(self) -> bool:
        with self._lock:
            return self._outages > 0

    def before_call(self) -> None:
        """``ScmOutage`` while the provider's calls pause after an outage answer."""
        with self._lock:
            now = self._clock()
            left, words, lasted = self._until - now, self._words, now - self._began
        if left > 0:
            raise ScmOutage(
                f"{self.provider} is unavailable ({lasted:.0f} s so far): {words};"
                f" calls resume in {left:.1f} s",
                delay=left,
            )

    def answered(self) -> None:
        """The plugin answered (not an outage): it is neither hung nor out."""
        with self._lock:
            self._timeouts = 0
            ended, self._outages = self._outages, 0
            self._until = -math.inf
            lasted = self._clock() - self._began
        if ended:
            log.info(
                "SCM available again",
                extra={**self._who(), "answers": ended, "seconds": round(lasted, 1)},
            )

    def outage(self, exc: ScmOutage) -> ScmOutage:
        """The plugin answered that its SCM is out: the error to raise, whose ``delay`` is
        the pause it starts (or ``exc``'s own, if longer)."""
        with self._lock:
            self._timeouts = 0  # it answered: not hung
            self._outages += 1
            n, now = self._outages, self._clock()
            if n == 1:
                self._began = now
            if exc.delay is not None:
                pause = exc.delay
            else:
                pause = 0.0 if n == 1 else min(FIRST_PAUSE * 2 ** (n - 2), MAX_PAUSE)
            self._until = max(self._until, now + pause)
            self._words = str(exc)
        if n == 1:
            log.warning(
                "SCM unavailable, as its plugin says: calls paused",
                extra={**self._who(), "error": str(exc), "pause": round(pause, 3)},
            )
        error = ScmOutage(f"{self.provider} is unavailable: {exc}", delay=pause or None)
        error.__cause__ = exc
        return error

    def timed_out(self) -> bool:
        """A call got no answer in time; whether that makes the plugin hung (and the count
        starts again)."""
        with self._lock:
            self._timeouts += 1
            if self._timeouts < HUNG_AFTER_TIMEOUTS:
                return False
            self._timeouts = 0
            return True

    def restarted(self) -> None:
        """A new process: no time-out counts against it."""
        with self._lock:
            self._timeouts = 0

    def _who(self) -> dict[str, object]:
        return {"provider": self.provider, "plugin": self.plugin}
