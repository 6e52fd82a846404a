"""What the promoter knows about open pull requests, so a reconcile need not ask each time.

Keyed by (repository, head branch, base branch); the value is the open PR or
``None`` ("known: none open"). Entries come from a read or from the promoter's
own actions (open, update, merge, close), and are dropped when they may be
wrong: after ``max_age`` (the resync interval), on a pull-request webhook (one
saying that the known PR was merged or closed leaves "none open" instead), when
an SCM call about the PR conflicts, or when the PR's head is not the proposed
tip. An entry that says "none open" for a settled environment (``settle``: nothing to
promote, nothing waiting) does not age: the periodic resync's sweep, a moved ref or a
reconcile that finds the environment unsettled drops the mark. A stale entry can never
cause a wrong merge: the merge carries the expected head SHA and the SCM enforces it.
``unheld`` remembers the labels the SCM did not keep on a pull request (``labels``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection

from promoter.models import PullRequest
from promoter.state.labels import UnheldLabels

Key = tuple[str, str, str]
_MISSING = object()


class PullRequestCache:
    def __init__(self, *, max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[Key, tuple[PullRequest | None, float]] = {}
        self._settled: set[Key] = set()
        self._ended: dict[Key, int] = {}
        """The PR a "none open" replaced: the webhook of its end says nothing new."""
        self.unheld = UnheldLabels(clock=clock)

    def get(self, key: Key) -> PullRequest | object | None:
        """The cached PR (or None), or ``MISSING`` when unknown or too old."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return _MISSING
            if key not in self._settled and self._clock() - entry[1] > self.max_age:
                return _MISSING
            return entry[0]

    def put(self, key: Key, pr: PullRequest | None) -> None:
        with self._lock:
            entry = self._entries.get(key)
            self._entries[key] = (pr, self._clock())
            if pr is not None:
                self._settled.discard(key)
                self._ended.pop(key, None)
            elif entry is not None and entry[0] is not None:
                self._ended[key] = entry[0].number  # the promoter's own merge or close

    def settle(self, key: Key, settled: bool = True) -> None:
        """Keep a known "none open" beyond ``max_age`` (or stop): see the module doc."""
        with self._lock:
            entry = self._entries.get(key)
            if settled and entry is not None and entry[0] is None:
                self._settled.add(key)
            else:
                self._settled.discard(key)

    def ended(self, key: Key, number: int) -> None:
        """PR ``number`` of head/base ``key`` was merged or closed (a webhook says so).

        When it is the open PR known, none is open now: the SCMs allow one open PR per
        head/base; so too when "none open" is known because that very PR was merged or
        closed by the promoter (its webhook came after). Anything else known is dropped, to
        be read again.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is not None and entry[0].number == number:
                self._entries[key] = (None, self._clock())
            elif entry is not None and entry[0] is None and self._ended.get(key) == number:
                pass  # the end of the PR the promoter itself merged or closed: none open
            else:
                self._entries.pop(key, None)
                self._settled.discard(key)
                self._ended.pop(key, None)

    def opened(self, key: Key, number: int, head_sha: str) -> None:
        """A webhook says PR ``number`` of ``key`` was opened with head ``head_sha``.

        When that is the very PR known, at that head (the webhook of the promoter's own
        opening), it tells nothing new and what is known stays; anything else is dropped,
        to be read again.
        """
        with self._lock:
            entry = self._entries.get(key)
            known = entry[0] if entry is not None else None
            if known is None or (known.number, known.head_sha) != (number, head_sha):
                self._entries.pop(key, None)
                self._settled.discard(key)
                self._ended.pop(key, None)

    def forget(self, key: Key) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._settled.discard(key)
            self._ended.pop(key, None)

    def forget_repositories(self, repos: Collection[str]) -> None:
        """Drop what is cached about these repositories (Kubernetes mode, sharded: their
        shard was just taken over, and another replica changed their PRs meanwhile, or it
        moved away), in one pass."""
        with self._lock:
            for key in [k for k in self._entries if k[0] in repos]:
                del self._entries[key]
                self._settled.discard(key)
                self._ended.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._settled.clear()
            self._ended.clear()


MISSING = _MISSING
