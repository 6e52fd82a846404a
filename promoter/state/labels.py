"""Labels an SCM did not keep on a pull request, so that they are not asked for in a loop.

Forgejo and Gitea drop a label name the repository has no label for, without an error;
a plugin may refuse others. The engine adds a missing wanted label back (``decide``):
without this memory, each pass would write the pull request again at once, for as long
as it is open. A label the SCM did not keep after a write is set aside for its
repository, reported, and asked for again after a backoff (a minute, doubling to an
hour: a person may have created it meanwhile). A write that keeps it ends the backoff.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

FIRST_RETRY = 60.0
MAX_RETRY = 3600.0


@dataclass
class _Refused:
    times: int
    retry_at: float


class UnheldLabels:
    """Per repository: the labels the SCM did not keep, until when they are not asked for."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._refused: dict[tuple[str, str], _Refused] = {}

    def observe(self, repo: str, wanted: Iterable[str], held: Iterable[str]) -> dict[str, float]:
        """After a write that asked for ``wanted`` left ``held`` on the pull request: the
        labels it did not keep that were not set aside already (to report), each with the
        seconds until it is asked for again."""
        kept = set(held)
        now = self._clock()
        refused: dict[str, float] = {}
        with self._lock:
            for label in dict.fromkeys(wanted):
                key = (repo, label)
                known = self._refused.get(key)
                if label in kept:
                    self._refused.pop(key, None)
                    continue
                if known is not None and known.retry_at > now:
                    continue  # another PR's write, in the same pass: known already
                times = known.times + 1 if known is not None else 1
                wait = min(FIRST_RETRY * 2 ** (times - 1), MAX_RETRY)
                self._refused[key] = _Refused(times, now + wait)
                refused[label] = wait
        return refused

    def current(self, repo: str) -> tuple[str, ...]:
        """The labels of ``repo`` not to ask for now (sorted)."""
        now = self._clock()
        with self._lock:
            return tuple(
                sorted(
                    label
                    for (name, label), refused in self._refused.items()
                    if name == repo and refused.retry_at > now
                )
            )
