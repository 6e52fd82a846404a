"""What each worker is busy with: the strategy it reconciles and the SCM call it waits on.

A worker says which strategy it reconciles (``working``); every SCM call says what it
is (``calling``, in ``scm_plugins.calls``), on the same thread. A strategy whose
reconcile takes long can then say what it waits on (``waiting``), in the API and on the
dashboard, where it would otherwise show nothing new until the reconcile ends. Process
wide, like the metrics registry; the work of other threads (the API's) is not recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SLOW = 2.0
"""Seconds a reconcile runs before its strategy's status says what it waits on."""


@dataclass
class _Work:
    key: str
    started: float
    calls: int = 0
    in_calls: float = 0.0
    current: tuple[str, str, float] | None = None
    """(provider, operation, started) of the SCM call in flight."""


@dataclass
class Activity:
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _by_thread: dict[int, _Work] = field(default_factory=dict)
    _by_key: dict[str, _Work] = field(default_factory=dict)

    @contextmanager
    def working(self, key: str) -> Iterator[None]:
        """This thread reconciles strategy ``key`` for the duration of the block."""
        work = _Work(key, self.clock())
        thread = threading.get_ident()
        with self._lock:
            self._by_thread[thread] = work
            self._by_key[key] = work
        try:
            yield
        finally:
            with self._lock:
                self._by_thread.pop(thread, None)
                if self._by_key.get(key) is work:
                    del self._by_key[key]

    @contextmanager
    def calling(self, provider: str, operation: str) -> Iterator[None]:
        """This thread waits on one SCM call for the duration of the block."""
        work = self.call_begins(provider, operation)
        try:
            yield
        finally:
            self.call_ends(work)

    def call_begins(self, provider: str, operation: str) -> _Work | None:
        """This thread now waits on one SCM call; give what it returns to ``call_ends``.

        Only this thread writes its ``_Work`` (and ``waiting`` only reads it), so a call
        takes no lock: every SCM call of every worker passes here.
        """
        work = self._by_thread.get(threading.get_ident())
        if work is not None:
            work.current = (provider, operation, self.clock())
        return work

    def call_ends(self, work: _Work | None) -> None:
        """The call ``call_begins`` announced has returned (or failed)."""
        if work is None or work.current is None:
            return
        started = work.current[2]
        work.current = None
        work.calls += 1
        work.in_calls += self.clock() - started

    def waiting(self, key: str) -> str | None:
        """What a reconcile of ``key`` running for ``SLOW`` seconds or more waits on; None
        when none runs or it is quick."""
        with self._lock:
            work = self._by_key.get(key)
            if work is None:
                return None
            now = self.clock()
            running = now - work.started
            if running < SLOW:
                return None
            current = work.current  # read once: the worker's thread sets it without a lock
            done = f"{work.calls} SCM call(s) took {work.in_calls:.1f} s"
            if current is None:
                return f"reconciling for {running:.0f} s; {done}"
            provider, operation, since = current
            return (
                f"reconciling for {running:.0f} s, waiting on a slow SCM call:"
                f" {provider} {operation} for {now - since:.1f} s; before it, {done}"
            )


ACTIVITY = Activity()
"""The daemon's: workers and SCM calls report here."""
