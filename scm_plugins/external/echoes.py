"""The promoter's own writes, recognised when a plugin's events report them back (v1.1).

A plugin reports every change it sees, the promoter's own writes included: one that
relays its SCM's webhooks cannot tell them apart. Such an echo tells the promoter
nothing it does not know (it keeps what it wrote), yet applied like any event it would
make it forget the pull request it just opened and read it again. So every write through
the plugin is noted before it is sent (``begin``), with what its echo will say:

- ``commitStatuses/set``: ``statusChanged`` on that commit, with that key and phase;
- ``pullRequests/open`` and ``update``: ``pullRequestChanged`` of that PR, open, with the
  head SHA the answer gave;
- ``pullRequests/merge``: that PR merged from the expected head, and ``refMoved`` of a
  branch to the merge commit the answer names;
- ``pullRequests/close``: that PR closed.

An event that may be the echo of a write still waiting for its answer is held (a plugin
may write the event before it answers the call that made the change); the answer settles
it: the echo of what the answer says is ``own``, anything else (the write failed, another
PR, a head that moved) is applied. After its answer a write's echoes are recognised for
``ECHO_WINDOW`` seconds; one that comes later is applied like any event: it costs a read,
and nothing else.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from promoter.models import Phase, PullRequestState
from scm_plugins.external.events import Event, RefMoved, StatusChanged

ECHO_WINDOW = 60.0
"""Seconds after a write's answer its echoes are recognised."""
MAX_WRITES = 1024
"""Answered writes remembered at most (the oldest are let go first)."""
MAX_HELD = 32
"""Events held for one write waiting for its answer; more are applied at once."""


def _same(a: str | None, b: str | None) -> bool:
    """Equal SHAs, or one side unknown."""
    return not a or not b or a.lower() == b.lower()


@dataclass(eq=False)
class Write:
    """One write through the plugin and what its echo will say (a status, or a PR)."""

    repository: str
    sha: str = ""
    key: str = ""
    phase: Phase | None = None
    number: int | None = None
    head: str = ""
    base: str = ""
    state: PullRequestState | None = None
    head_sha: str = ""
    merge_sha: str = ""
    answered: bool = False
    until: float = math.inf
    held: list[Event] = field(default_factory=list)

    def echoed_by(self, event: Event) -> bool:
        if event.repository != self.repository:
            return False
        if isinstance(event, StatusChanged):
            status = event.status
            return (
                self.phase is not None
                and event.sha.lower() == self.sha.lower()
                and (status.key, status.phase) == (self.key, self.phase)
            )
        if isinstance(event, RefMoved):  # a merge's: to a commit only its answer names
            return (
                self.state is PullRequestState.MERGED
                and event.ref.startswith("refs/heads/")
                and event.after is not None
                and (not self.answered or event.after.lower() == self.merge_sha.lower())
            )
        pr = event.pull_request
        return (
            self.state is not None
            and pr.state is self.state
            and self.number in (None, pr.number)
            and self.head in ("", pr.head_branch)
            and self.base in ("", pr.base_branch)
            and _same(self.head_sha, pr.head_sha)
            and _same(self.merge_sha, pr.merge_sha)
        )


@dataclass
class Settled:
    """What a write's answer (or failure) made of the events held for it."""

    own: list[Event] = field(default_factory=list)
    applied: list[Event] = field(default_factory=list)


class OwnWrites:
    """The writes of one provider, in flight and lately answered. Thread-safe: writes come
    from worker threads, events from the plugin's reader thread."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, window: float = ECHO_WINDOW
    ) -> None:
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        self._writes: list[Write] = []

    def begin(self, write: Write) -> Write:
        with self._lock:
            self._prune()
            self._writes.append(write)
        return write

    def answered(
        self, write: Write, *, number: int | None = None, head_sha: str = "", merge_sha: str = ""
    ) -> Settled:
        """``write`` done as its answer says; its held events settled by the answer."""
        with self._lock:
            if number is not None:
                write.number = number
            write.head_sha = head_sha or write.head_sha
            write.merge_sha = merge_sha or write.merge_sha
            write.answered, write.until = True, self._clock() + self._window
            held, write.held = write.held, []
        settled = Settled()
        for event in held:
            (settled.own if write.echoed_by(event) else settled.applied).append(event)
        return settled

    def failed(self, write: Write) -> Settled:
        """``write`` failed: it is forgotten, and what was held for it is applied."""
        with self._lock:
            if write in self._writes:
                self._writes.remove(write)
            held, write.held = write.held, []
        return Settled(applied=held)

    def claim(self, event: Event) -> str | None:
        """``own`` (the echo of an answered write), ``held`` (maybe the echo of a write in
        flight: its answer settles it), or None (apply it)."""
        with self._lock:
            self._prune()
            for write in reversed(self._writes):
                if write.answered and write.echoed_by(event):
                    return "own"
            for write in reversed(self._writes):
                if not write.answered and len(write.held) < MAX_HELD and write.echoed_by(event):
                    write.held.append(event)
                    return "held"
        return None

    def _prune(self) -> None:
        now = self._clock()
        self._writes = [w for w in self._writes if not w.answered or w.until > now]
        answered = [w for w in self._writes if w.answered]
        for old in answered[: max(0, len(answered) - MAX_WRITES)]:
            self._writes.remove(old)
