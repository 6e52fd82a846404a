"""A small pool of daemon threads that run what they are given, at most ``size`` at once.

Unlike ``ThreadPoolExecutor``'s, its threads are daemon threads and end after ``idle``
seconds without work: a thread stuck in a call that never answers neither keeps the
process from exiting nor lives on once its call ends. Thread-safe.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("promoter.lanes")

Work = Callable[[], None]


class Lane:
    def __init__(self, name: str, size: int, *, idle: float = 60.0) -> None:
        self.name = name
        self.size = size
        self.idle = idle
        self._work: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._waiting = 0
        """Threads waiting for work."""
        self._backlog = 0
        """Work given and not taken yet."""
        self._closed = False

    def submit(self, work: Work) -> None:
        """Run ``work`` on one of the lane's threads: a new one unless enough wait idle."""
        with self._lock:
            if self._closed:
                return
            self._backlog += 1
            start = self._backlog > self._waiting and self._threads < self.size
            if start:
                self._threads += 1
        self._work.put(work)
        if start:
            threading.Thread(target=self._loop, name=self.name, daemon=True).start()

    def close(self) -> None:
        """Let the threads go once they are free; work not started is dropped."""
        with self._lock:
            self._closed = True
            threads = self._threads
        for _ in range(threads):
            self._work.put(None)

    def _loop(self) -> None:
        while True:
            with self._lock:
                self._waiting += 1
            try:
                work = self._work.get(timeout=self.idle)
            except queue.Empty:
                with self._lock:
                    self._waiting -= 1
                    if self._backlog > 0 and not self._closed:
                        continue  # work is being given to this thread's lane right now
                    self._threads -= 1
                    return
            with self._lock:
                self._waiting -= 1
                if work is not None:
                    self._backlog -= 1
                if work is None or self._closed:
                    self._threads -= 1
                    return
            try:
                work()
            except Exception:
                log.exception("lane work crashed", extra={"lane": self.name})
