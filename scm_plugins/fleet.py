"""One credential's windows as a whole fleet of processes spends them, in one shared log.

Several processes spending one credential (Kubernetes mode with shards: a replica per
process) used to split its limits by share: each got the part of every limit that its
held strategies weighed. A replica whose share shrank (a kill, a scale-up) below what it
had already spent in the hour then waited for its own spending to age out of the
window, up to an hour, while the credential had room: 403 of 500 content calls spent in
the fleet, and two replicas stopped for 50 minutes.

The limits whose spending is remembered over a window (content-creating requests per
minute and per hour, points per minute) are kept instead in one log for the whole fleet
(``Spent``), which the processes take room from with an optimistic write each
(``Fleet.take``: in Kubernetes, an annotation of a Lease written with its
resourceVersion, ``promoter.kube.shards.spending``). A call waits only when the fleet
as a whole has no room: when the SCM itself would refuse it. Content calls take their
room one at a time (an API write each: at most GitHub's 80 a minute, 500 an hour);
points are taken ``GRANT`` at a time and spent locally. Room taken for a call that is
then not sent is not given back (it would cost another write): it ages out of the log.

The log is the pure part here: what is spent, when, and when room comes; the process
that keeps it (and what it does when it cannot be reached) is the caller's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

GRANT = 20
"""Points taken from the fleet's log at a time (four writes, or twenty reads)."""
HELD = 1.05
"""The log keeps entries this share of a span longer than the SCM (clocks differ)."""


class FleetUnavailable(Exception):
    """The fleet's log cannot be read or written now (its store does not answer)."""


@dataclass(frozen=True)
class Want:
    """What one call takes: content (0 or 1), points, and the share of each limit it
    leaves to the classes above it (``budget.RESERVE``)."""

    content: int
    points: int
    reserve: float


class Windows(Protocol):
    """The limits the fleet's log keeps (``budget.Limits`` is one); times in seconds."""

    @property
    def content_per_minute(self) -> int: ...

    @property
    def content_per_window(self) -> int: ...

    @property
    def points_per_minute(self) -> int: ...

    @property
    def minute(self) -> float: ...

    @property
    def window(self) -> float: ...


class Fleet(Protocol):
    """Where a credential's windows are kept for every process that spends it."""

    def take(self, want: Want, limits: Windows, *, now: float) -> float:
        """Take room for one call: 0 when taken; else the seconds until the fleet has
        room for it (nothing taken). ``FleetUnavailable`` when the log cannot be reached.
        ``now``: seconds since the epoch (the processes share it)."""


SLOTS = 60
"""Points are logged in slots of a sixtieth of a minute (a second, unless time is
scaled)."""


def _slot(limits: Windows) -> float:
    return limits.minute / SLOTS


@dataclass
class Spent:
    """The fleet's log: when each content call was made, and points by slot."""

    content: list[float] = field(default_factory=list)
    points: dict[int, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> Spent:
        """From its annotation; an empty log when there is none or it is garbage (a log
        lost means at most one window's spending uncounted)."""
        try:
            data = json.loads(text or "{}")
            content = sorted(float(t) for t in data.get("content", []))
            points = {int(s): int(n) for s, n in data.get("points", [])}
        except (ValueError, TypeError, AttributeError):
            return cls()
        return cls(content, points)

    def dump(self) -> str:
        points = sorted(self.points.items())
        return json.dumps(
            {"v": 1, "content": [round(t, 3) for t in self.content], "points": points},
            separators=(",", ":"),
        )

    def expire(self, now: float, limits: Windows) -> None:
        """Forget what no window counts any more."""
        self.content = [t for t in self.content if t > now - limits.window * HELD]
        edge, slot = now - limits.minute * HELD, _slot(limits)
        self.points = {s: n for s, n in self.points.items() if (s + 1) * slot > edge}

    def wait(self, want: Want, limits: Windows, now: float) -> float:
        """Seconds until ``want`` fits in every window the fleet shares (0: now)."""
        waits = [0.0]
        minute, window, reserve = limits.minute * HELD, limits.window * HELD, want.reserve
        if want.content:
            waits.append(_wait(self.content, now, minute, limits.content_per_minute, reserve))
            waits.append(_wait(self.content, now, window, limits.content_per_window, reserve))
        if want.points:
            span, slot = minute, _slot(limits)
            edge = now - span
            counted = sorted((s, n) for s, n in self.points.items() if (s + 1) * slot > edge)
            per_minute = limits.points_per_minute
            room = per_minute - math.floor(per_minute * reserve)
            excess = sum(n for _, n in counted) + want.points - room
            if want.points > room:
                waits.append(math.inf)
            elif excess > 0:
                freed = 0
                for second, n in counted:
                    freed += n
                    if freed >= excess:
                        waits.append((second + 1) * slot + span - now)
                        break
        return max(waits)

    def add(self, now: float, limits: Windows, *, content: int, points: int) -> None:
        self.content.extend([now] * content)
        if points:
            slot = math.floor(now / _slot(limits))
            self.points[slot] = self.points.get(slot, 0) + points

    def totals(self, now: float, limits: Windows) -> tuple[int, int, int]:
        """Content calls in the last minute and window, points in the last minute."""
        minute, window, slot = limits.minute * HELD, limits.window * HELD, _slot(limits)
        in_minute = sum(1 for t in self.content if t > now - minute)
        in_window = sum(1 for t in self.content if t > now - window)
        points = sum(n for s, n in self.points.items() if (s + 1) * slot > now - minute)
        return in_minute, in_window, points


def _wait(times: Iterable[float], now: float, span: float, limit: int, reserve: float) -> float:
    """Seconds until one more entry fits within ``limit`` less its reserve in ``span``."""
    counted = sorted(t for t in times if t > now - span)
    room = limit - math.floor(limit * reserve)
    if room < 1:
        return math.inf
    excess = len(counted) + 1 - room
    if excess <= 0:
        return 0.0
    return counted[excess - 1] + span - now
