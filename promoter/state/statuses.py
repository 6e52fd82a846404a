"""An in-memory cache of commit statuses per (repository, SHA), fed by reads and webhooks.

A full read from the SCM makes an entry *complete*; webhook events merge single
statuses into it so that the next reconcile sees them without an SCM read. A commit a
push webhook announced as new is complete from the start (``created``): the SCM can
only report its statuses from then on, and those reports are webhooks too. The newer
report wins: by the SCM's own order (``revision``) when both have one, a later arrival
when that is equal, else by ``updated_at`` compared at whole seconds (the SCMs'
resolution: on a tie the later arrival wins, so a status someone else wrote just after
the promoter's own write replaces it). Entries older than the TTL are not trusted,
except *settled* ones (``settle``): the statuses of a commit whose verdict cannot change
(merged, recorded healthy, nothing downstream waiting), kept until the periodic resync's
sweep, a moved ref or a reconcile that finds it unsettled says otherwise; and those a
reader takes at any age (``get(any_age=True)``: a proposed commit whose dry commit
already runs, whose statuses gate nothing). An entry is dropped once no strategy
tracks its commit any more (the reconciler, through ``ShaIndex.track``): a daemon that
promotes all day keeps the statuses of the commits it works on, not of every commit it
ever promoted.

**Never echo yourself.** The promoter's own writes are remembered (``wrote``), keyed by
(repository, SHA, key) with the phase written, never by the description: an SCM hands a
status back relabelled (GitLab's Pipeline Hook reports each status of an external
pipeline as "success (pipeline #12)", other SCMs clip or reword it). A status that comes
back, by webhook (``put``) or by a read (``store``), with the key and phase of the
promoter's latest write on that commit is taken for that write, with its own words, so
the engine sees its check already written and writes nothing; ``put`` says whether it
changed anything, and a recognised echo does not (nothing to wake a strategy for). A
status of another phase is someone else's (a forged ``success``) and is kept as read, so
it is corrected. What was written is let go with its commit (``release``). Writes
themselves are bounded per commit and per minute (``writes``, ``write_bound``).
Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from promoter.models import CommitStatus
from promoter.state.write_bound import WriteBound

MAX_ENTRIES = 200_000
"""Commits kept: every tracked one at 10,000 strategies x 4 environments (active and
proposed), with room for the commits that come and go."""
MAX_OWN = 50_000
"""Commits whose own statuses the promoter remembers (its checks go on proposed commits)."""


def newer(old: CommitStatus, new: CommitStatus) -> bool:
    """Whether ``old`` is strictly newer than ``new`` (``new`` arrived later)."""
    if old.revision is not None and new.revision is not None:
        return old.revision > new.revision
    return _second(old.updated_at) > _second(new.updated_at)


def _same(shown: CommitStatus | None, status: CommitStatus) -> bool:
    """Whether ``shown`` already says what ``status`` says (phase, words and link)."""
    return shown is not None and (shown.phase, shown.description, shown.url) == (
        status.phase,
        status.description,
        status.url,
    )


def _second(at: datetime) -> datetime:
    """``at`` at the SCMs' resolution: statuses read back carry whole seconds."""
    return at.replace(microsecond=0)


@dataclass
class _Entry:
    statuses: dict[str, CommitStatus] = field(default_factory=dict)
    complete: bool = False
    read_at: float = 0.0
    settled: bool = False


class StatusCache:
    def __init__(
        self,
        *,
        ttl: float = 60.0,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        """Seconds, for the entries' age (a test moves it past the TTL)."""
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._own: OrderedDict[tuple[str, str], dict[str, CommitStatus]] = OrderedDict()
        self.writes = WriteBound()
        """How many of its own statuses the promoter may write on a commit each minute."""

    def get(self, repo: str, sha: str, *, any_age: bool = False) -> list[CommitStatus] | None:
        """The statuses of a SHA if a complete, fresh (``any_age``: any) entry exists; else
        None."""
        with self._lock:
            entry = self._entries.get((repo, sha))
            if entry is None or not entry.complete:
                return None
            if not (entry.settled or any_age) and self.clock() - entry.read_at > self.ttl:
                return None
            self._entries.move_to_end((repo, sha))
            return list(entry.statuses.values())

    def store(self, repo: str, sha: str, statuses: Iterable[CommitStatus]) -> None:
        """Record a full read from the SCM; keeps webhook statuses that are newer."""
        with self._lock:
            entry = self._entry(repo, sha)
            fresh = {s.key: self._recognised(repo, sha, s) for s in statuses}
            for key, old in entry.statuses.items():
                new = fresh.get(key)
                if new is None or newer(old, new):
                    fresh[key] = old
            entry.statuses = fresh
            entry.complete = True
            entry.read_at = self.clock()

    def created(self, repo: str, sha: str) -> None:
        """A commit just pushed for the first time: what webhooks bring is all it has.

        Statuses that webhooks already put are kept. The entry ages like a read one
        (``ttl``), and a resync forgets it, so a lost webhook is still healed.
        """
        with self._lock:
            entry = self._entry(repo, sha)
            if not entry.complete:
                entry.complete = True
                entry.read_at = self.clock()

    def put(self, repo: str, sha: str, status: CommitStatus) -> bool:
        """Merge one status (from a webhook or the promoter's own write); whether anything
        changed (an echo of the promoter's own write already known changes nothing)."""
        with self._lock:
            mine = self._recognised(repo, sha, status)
            entry = self._entries.get((repo, sha))
            shown = entry.statuses.get(status.key) if entry is not None else None
            if mine is not status and _same(shown, mine):
                return False
            entry = self._entry(repo, sha)
            old = entry.statuses.get(status.key)
            if old is None or not newer(old, mine):
                entry.statuses[status.key] = mine
            return True

    def wrote(self, repo: str, sha: str, status: CommitStatus) -> None:
        """The promoter wrote ``status`` on ``sha``: remember it as its own, and merge it."""
        with self._lock:
            self._own.setdefault((repo, sha), {})[status.key] = status
            self._own.move_to_end((repo, sha))
            while len(self._own) > MAX_OWN:
                self._own.popitem(last=False)
        self.put(repo, sha, status)

    def _recognised(self, repo: str, sha: str, status: CommitStatus) -> CommitStatus:
        """``status`` as the promoter wrote it when it is the echo of its latest write of
        that key on ``sha`` (same phase, whatever the words); else ``status`` itself."""
        own = self._own.get((repo, sha), {}).get(status.key)
        if own is None or own is status or own.phase is not status.phase:
            return status
        return own.model_copy(update={"updated_at": status.updated_at, "revision": status.revision})

    def settle(self, repo: str, sha: str, settled: bool = True) -> None:
        """Trust (or stop trusting) a complete entry beyond the TTL: see the module doc."""
        with self._lock:
            entry = self._entries.get((repo, sha))
            if entry is not None:
                entry.settled = settled and entry.complete

    def forget(self, repo: str, sha: str) -> None:
        """Read this SHA from the SCM next time (webhooks put into a new entry meanwhile)."""
        with self._lock:
            self._entries.pop((repo, sha), None)

    def release(self, repo: str, sha: str) -> None:
        """No strategy tracks this SHA any more: forget it, and what the promoter wrote on it."""
        with self._lock:
            self._entries.pop((repo, sha), None)
            self._own.pop((repo, sha), None)

    def forget_repositories(self, repos: Collection[str]) -> None:
        """Read every SHA of these repositories from the SCM next time (another replica
        may have worked on them meanwhile, or works on them now), in one pass; what this
        one wrote there is no longer known to be the latest."""
        with self._lock:
            for key in [k for k in self._entries if k[0] in repos]:
                del self._entries[key]
            for own in [k for k in self._own if k[0] in repos]:
                del self._own[own]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._own.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, commit: object) -> bool:
        """Whether ``(repository, sha)`` has an entry (complete or not, fresh or not)."""
        with self._lock:
            return commit in self._entries

    def _entry(self, repo: str, sha: str) -> _Entry:
        entry = self._entries.get((repo, sha))
        if entry is None:
            entry = self._entries[(repo, sha)] = _Entry()
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        self._entries.move_to_end((repo, sha))
        return entry
