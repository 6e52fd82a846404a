"""One credential's budget, shared by every call made with it: wait for room, or give back.

Before a call goes out it is admitted against every limit its SCM sets on the
credential (``Limits``): the primary hourly budget (a token bucket that spreads it, and
the remaining count the SCM's answers report, ``primary``), the number of requests in
flight, points per minute (reads and writes weigh differently) and content-creating
requests per minute and per window (``windows``). A conditional read that is likely
free (a revalidation, answered 304) takes no token up front; it pays one if the answer
is not a 304, and a 304 to any other call is refunded.

Priorities: each class below the first leaves a share of every limit (``RESERVE``) to
the classes above it, so merges and the re-reads before a merge always find room that
writes and then background reads may not take; and a waiting call of a higher class
needs less room, so it goes first when room comes back. A call waits in its thread only
briefly (``HOLD`` x ``Limits.max_wait``, on a condition, woken when a call ends or at
the moment its room is due), never polling; a longer wait raises ``Throttled`` with the
time to come back, so the work queue holds the strategy instead of a worker thread.
Refused calls of one class get successive slots (when room is due for the first, the
second, ... of them), so they do not all come back at once.

Several processes spending one credential (sharded Kubernetes mode) each get a
``share`` of its concurrency and primary budget, re-split when repositories move. The
limits a window remembers (content calls per minute and hour, points per minute) are not
split: given a ``Fleet`` (``spend_with``), a call takes room from the fleet's one log of
them (``scm_plugins.fleet``) and waits only when the whole fleet has none; when that log
cannot be reached, they count ``share`` times too.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial

from scm_plugins.fleet import Fleet, FleetUnavailable, Want
from scm_plugins.primary import PrimaryLimit
from scm_plugins.priorities import HOLD as HOLD
from scm_plugins.priorities import RESERVE as RESERVE
from scm_plugins.priorities import Priority as Priority
from scm_plugins.windows import SlidingWindow, TokenBucket


@dataclass(frozen=True)
class Cost:
    """What one call takes from its credential's budget."""

    priority: Priority
    points: int = 1
    content: bool = False
    """A content-creating request (a pull request, a comment, a merge)."""
    revalidation: bool = False
    """A conditional read of something read before: free on the primary limit if 304."""
    core: bool = True
    """Charged to the primary limit. GitHub's GraphQL API has a primary limit of its own
    (points an hour): its requests count against the secondary limits only here."""


@dataclass(frozen=True)
class Limits:
    """An SCM's limits on one credential; times in seconds."""

    window: float
    """The primary limit's window (GitHub: an hour)."""
    primary: int
    """Requests per window until the SCM's headers say otherwise."""
    burst: float
    """The token bucket's size as a share of the primary limit."""
    concurrent: int
    points_per_minute: int
    content_per_minute: int
    content_per_window: int
    slack: float = 0.05
    """Sliding windows are held this share longer than the SCM's, for clock and latency
    differences; a reset is waited out this share of a minute longer."""
    max_wait: float = 2.0
    """The longest a call waits in its thread (times ``HOLD``) before giving it back."""

    @property
    def minute(self) -> float:
        return self.window / 60.0

    def scaled(self, window: float) -> Limits:
        """The same limits with time running ``self.window / window`` times faster."""
        return replace(self, window=window, max_wait=self.max_wait * window / self.window)


class Throttled(Exception):
    """The budget has no room soon enough: come back in ``retry_after`` seconds."""

    def __init__(self, retry_after: float, limit: str) -> None:
        super().__init__(f"the {limit} limit has no room for {retry_after:.2f} s")
        self.retry_after = retry_after
        self.limit = limit


@dataclass
class BudgetStats:
    """What the budget did so far (for logs and benchmarks)."""

    admitted: int = 0
    waited: int = 0
    waited_s: float = 0.0
    longest_wait_s: float = 0.0
    throttled: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Short:
    """Why a call cannot go now: the wait, the spacing between refused calls, the limit;
    ``nth(k)``, when known, the wait until ``k`` such calls fit (a window frees its room
    as its old entries leave it, not evenly)."""

    wait: float
    spacing: float
    limit: str
    on_release: bool = False
    nth: Callable[[int], float] | None = None


class Ticket:
    """One admitted call; ``answered`` (or ``close``) gives its place back."""

    def __init__(self, budget: CredentialBudget, cost: Cost) -> None:
        self._budget = budget
        self.cost = cost
        self._settled = False

    def answered(self, status: int, headers: Mapping[str, str]) -> None:
        if not self._settled:
            self._settled = True
            self._budget.settle(self.cost, status, headers)

    def close(self) -> None:
        """No answer came (a transport error): only the place in flight is given back."""
        if not self._settled:
            self._settled = True
            self._budget.settle(self.cost, None, {})

    def cancel(self) -> None:
        """The call was never sent (its write's hold lapsed while it waited): everything
        it took is given back."""
        if not self._settled:
            self._settled = True
            self._budget.give_back(self.cost)


class CredentialBudget:
    """The shared limiter of one credential. Thread-safe."""

    def __init__(
        self,
        limits: Limits,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._wall = wall
        now = clock()
        held = 1.0 + limits.slack
        self.primary = PrimaryLimit(limit=limits.primary, window=limits.window)
        self._bucket = TokenBucket(
            rate=limits.primary / limits.window,
            capacity=max(1.0, limits.burst * limits.primary),
            now=now,
        )
        self._points = SlidingWindow(limits.points_per_minute, limits.minute * held)
        self._content_minute = SlidingWindow(limits.content_per_minute, limits.minute * held)
        self._content_window = SlidingWindow(limits.content_per_window, limits.window * held)
        self._in_flight = 0
        self._share = 1.0
        self._fleet: Fleet | None = None
        self._concurrent = limits.concurrent
        self._slots: dict[Priority, list[float]] = {p: [] for p in Priority}
        """The times given to refused calls, by class, still to come."""
        self._cond = threading.Condition()
        self.stats = BudgetStats()

    def admit(self, cost: Cost) -> Ticket:
        """Wait (briefly) for room for ``cost`` and take it, here and in the fleet's log
        (``spend_with``); ``Throttled`` when the room is further away than this class may
        wait in its thread, or the fleet has none."""
        ticket = self._admit_here(cost)
        fleet = self._fleet
        if fleet is None or not (cost.content or cost.points):
            return ticket
        want = Want(int(cost.content), cost.points, RESERVE[cost.priority])
        try:
            wait = fleet.take(want, self.limits, now=self._wall())
            limit = "content" if cost.content else "points"
        except FleetUnavailable:
            with self._cond:
                short = self._shared_short(cost, self._clock())
            wait, limit = (0.0, "") if short is None else (short.wait, short.limit)
        if wait > 0:
            ticket.cancel()
            with self._cond:
                self._throttled(cost.priority)
            raise Throttled(wait, limit)
        return ticket

    def _throttled(self, priority: Priority) -> None:  # under the lock
        name = priority.name.lower()
        self.stats.throttled[name] = self.stats.throttled.get(name, 0) + 1

    def _admit_here(self, cost: Cost) -> Ticket:
        started = self._clock()
        deadline = started + self.limits.max_wait * HOLD[cost.priority]
        with self._cond:
            while True:
                now = self._clock()
                short = self._short(cost, now)
                if short is None:
                    self._take(cost, now)
                    self._count(now - started)
                    return Ticket(self, cost)
                timeout = deadline - now if short.on_release else short.wait
                if now + (0.0 if short.on_release else short.wait) > deadline or timeout <= 0:
                    retry_after = self._slot(cost.priority, now, short)
                    self._throttled(cost.priority)
                    raise Throttled(retry_after, short.limit)
                self._cond.wait(max(timeout, 0.001))

    def settle(self, cost: Cost, status: int | None, headers: Mapping[str, str]) -> None:
        """A call ended: its place in flight back, its primary cost settled, headers learnt."""
        with self._cond:
            now = self._clock()
            self._in_flight -= 1
            if status is not None and cost.core:  # another limit's answer says nothing of it
                if cost.revalidation and status != 304:
                    self._bucket.take(1, now)
                elif not cost.revalidation and status == 304:
                    self._bucket.give(1, now)
                if status < 400 or any(k.lower() == "x-ratelimit-limit" for k in headers):
                    self.primary.learn(headers, now=now, wall=self._wall())
            self._cond.notify_all()

    def give_back(self, cost: Cost) -> None:
        """A call admitted and never sent: its place in flight and what it spent back."""
        with self._cond:
            now = self._clock()
            self._in_flight -= 1
            if not cost.revalidation and not self.primary.unlimited:
                self._bucket.give(1, now)
            self._points.give_back(cost.points)
            if cost.content:
                self._content_minute.give_back(1)
                self._content_window.give_back(1)
            self._cond.notify_all()

    def share(self, fraction: float) -> None:
        """Spend only ``fraction`` (0 < fraction <= 1) of the credential's limits (but the
        windows' when kept with the fleet's, ``spend_with``): the rest is other processes'."""
        limits = self.limits
        with self._cond:
            self._share = share = min(1.0, max(fraction, 1e-4))
            self._concurrent = max(1, math.floor(limits.concurrent * share))
            windowed = 1.0 if self._fleet is not None else share
            for window, limit in self._windows():
                window.capacity = max(1.0, limit * windowed)
            self._cond.notify_all()

    def spend_with(self, fleet: Fleet | None) -> None:
        """Keep the windows' limits with ``fleet`` (None: split them by share again)."""
        with self._cond:
            self._fleet = fleet
        self.share(self._share)

    def _windows(self) -> list[tuple[SlidingWindow, int]]:
        lim = self.limits
        counts = [lim.points_per_minute, lim.content_per_minute, lim.content_per_window]
        windows = [self._points, self._content_minute, self._content_window]
        return list(zip(windows, counts, strict=True))

    def _shared_short(self, cost: Cost, now: float) -> _Short | None:
        """Under the lock, the fleet's log out of reach: why ``cost`` (already counted
        here) would not fit in this process's share of the windows' limits."""
        amounts = [cost.points, int(cost.content), int(cost.content)]
        for (window, limit), amount in zip(self._windows(), amounts, strict=True):
            capacity = max(1.0, limit * self._share)
            reserve = math.floor(capacity * RESERVE[cost.priority])
            wait = window.wait(0, now, reserve=reserve, capacity=capacity) if amount else 0.0
            if wait > 0:
                name = "points" if window is self._points else "content"
                return _Short(wait, window.span / capacity, name)
        return None

    @property
    def current_share(self) -> float:
        return self._share

    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    # --- the rules ---------------------------------------------------------------------

    def _short(self, cost: Cost, now: float) -> _Short | None:
        """Why ``cost`` cannot go now (the longest wait of every limit), or None."""
        share = RESERVE[cost.priority]
        limits = self.limits
        found: list[_Short] = []
        concurrent = self._concurrent
        if self._in_flight >= concurrent - math.floor(concurrent * share):
            found.append(_Short(limits.minute / 60.0, 0.0, "concurrency", on_release=True))
        if cost.core and not self.primary.unlimited:
            found += self._primary_short(cost, now, share)
        windows = [(self._points, cost.points, "points")]
        if cost.content:
            windows += [(self._content_minute, 1, "content"), (self._content_window, 1, "content")]
        for window, amount, name in windows:
            reserve = math.floor(window.capacity * share)
            wait = window.wait(amount, now, reserve=reserve)
            if wait > 0:
                spacing = window.span / window.capacity * amount
                nth = partial(_nth, window, amount, now, reserve)
                found.append(_Short(wait, spacing, name, nth=nth))
        if not found:
            return None
        return max(found, key=lambda s: (not s.on_release, s.wait))

    def _primary_short(self, cost: Cost, now: float, share: float) -> list[_Short]:
        primary, limits, ours = self.primary, self.limits, self._share
        found = []
        spacing = primary.window / (primary.limit * ours)
        left = primary.available(now, in_flight=0) * ours - self._in_flight
        if left - math.floor(primary.limit * ours * share) < 1:
            wait = primary.until_reset(now) + limits.slack * limits.minute
            found.append(_Short(wait, spacing, "primary"))
        self._bucket.retune(
            rate=primary.rate(now, in_flight=self._in_flight) * ours,
            capacity=max(1.0, limits.burst * primary.limit * ours),
            now=now,
        )
        need = 0 if cost.revalidation else 1
        reserve = math.floor(self._bucket.capacity * share)
        wait = self._bucket.wait(need, now, reserve=reserve)
        if wait > 0:
            found.append(_Short(wait, 1.0 / self._bucket.rate, "primary"))
        return found

    def _take(self, cost: Cost, now: float) -> None:
        self._in_flight += 1
        if cost.core and not cost.revalidation and not self.primary.unlimited:
            self._bucket.take(1, now)
        self._points.spend(cost.points, now)
        if cost.content:
            self._content_minute.spend(1, now)
            self._content_window.spend(1, now)

    def _slot(self, priority: Priority, now: float, short: _Short) -> float:
        """Seconds until a refused call of ``priority`` comes back: when room is due for it
        after the refused calls of its class still to come back before it."""
        pending = [at for at in self._slots[priority] if at > now]
        k = len(pending) + 1
        wait = short.nth(k) if short.nth is not None else math.inf
        if not math.isfinite(wait):
            first = short.wait if math.isfinite(short.wait) else self.limits.minute
            wait = first + (k - 1) * short.spacing
        pending.append(now + wait)
        self._slots[priority] = pending
        return wait

    def _count(self, waited: float) -> None:
        stats = self.stats
        stats.admitted += 1
        if waited > 0.0005:
            stats.waited += 1
            stats.waited_s += waited
            stats.longest_wait_s = max(stats.longest_wait_s, waited)


def _nth(window: SlidingWindow, amount: float, now: float, reserve: float, k: int) -> float:
    """Seconds until ``k`` calls of ``amount`` fit in ``window`` (``inf`` past its size)."""
    return window.wait(amount * k, now, reserve=reserve)
