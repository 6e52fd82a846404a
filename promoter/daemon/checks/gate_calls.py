"""The one contract of every gate backend: a deadline on each call, a bound on the calls in
flight per backend and in all, and every exception or malformed answer turned into a verdict.

HTTP checks, Argo CD, Flux (the Kubernetes API), and the SCM reads and writes made for a
gate (an approval's reviews, a check's result published) all go through ``GateCalls``:

- ``call`` runs the backend's call on that backend's own threads, at most ``per_backend``
  at once (more wait in line, each within its deadline, up to ``LINE`` per thread), and
  waits for it at most ``timeout`` seconds. A call that overruns is abandoned, not
  killed: it keeps its thread until its own socket timeouts end it; a call given up while
  in line is not made.
  So a hanging backend holds its own few threads and no one else's. A backend whose last
  call was given up at its deadline (``late``) gets one call in flight, not
  ``per_backend``, until one answers in time; and all backends together have at most
  ``total`` calls unended, the last ``reserve`` of them kept for backends that answer, so
  that many hanging backends (ten hosts, each its own backend) cannot take every thread.
- ``start`` is ``call`` without waiting: a future that holds the answer, what the call
  raised, or ``Unreachable`` once the deadline passed. A caller on a shared pool (the
  gate checks) hands the rest of its work to the future and frees its thread at once,
  so no pool waits on a backend.
- ``judge`` is ``call`` for a gate's check: any exception becomes a ``pending`` verdict
  in the backend's words ("Argo CD not reachable: Connection reset by peer"), clipped,
  with every known secret blanked out, and flagged ``trouble`` (asked again with
  backoff). A check says ``failure`` only when the backend's answer says so.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TypeVar

import requests
from urllib3.exceptions import HTTPError

from promoter.daemon.checks.lanes import Lane
from promoter.models import CommitStatus, Phase
from promoter.redaction import scrub

log = logging.getLogger("promoter.gates")

T = TypeVar("T")

WORDS = 100
"""Characters of a backend's own words kept in a verdict (a PR check holds 140)."""
GRACE = 1.2
"""A check keeps its own deadline (its words say what was late); the contract gives up on
it a little after that, for a check that does not."""
IDLE = 600.0
"""Seconds after which an idle backend's threads are let go."""
LINE = 4
"""Calls to a backend that answers, per thread of its own, that may wait in line for one
(each within its own deadline) before more are refused at once."""
TOTAL = 32
"""Gate calls unended at once, all backends together (``GateCalls.total``)."""


class GateTrouble(Exception):
    """A backend gave no usable answer; the message is in the backend's words."""


class Unreachable(GateTrouble):
    """No answer, a network or TLS error, 5xx, 429, missing credentials: ask again later."""


class Garbage(GateTrouble):
    """An answer that cannot be read: not JSON, or JSON of the wrong shape."""


TRANSPORT = (GateTrouble, OSError, requests.RequestException, HTTPError)
"""What a backend's call raises when the network or the backend fails: no traceback logged."""


def clip(text: str, limit: int = WORDS) -> str:
    """``text`` on one line, without secrets, at most ``limit`` characters."""
    flat = " ".join(scrub(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def words_of(exc: BaseException) -> str:
    """What went wrong, in the words of the deepest cause that has any (a refused
    connection says "[Errno 111] Connection refused", not the three wrappers around it)."""
    if isinstance(exc, GateTrouble):
        return clip(str(exc))
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        reason = getattr(current, "reason", None)
        inner = [a for a in current.args if isinstance(a, BaseException)]
        if isinstance(reason, BaseException):
            current = reason
        elif inner:
            current = inner[0]
        else:
            current = current.__cause__ or current.__context__
    for cause in reversed(chain):
        text = _own_words(cause)
        if text:
            return clip(text)
    return type(exc).__name__


def _own_words(exc: BaseException) -> str:
    text = str(exc)
    if "Max retries exceeded" in text or not text.strip():
        return ""  # urllib3's wrapper: its cause says what happened
    if " object at 0x" in text:  # urllib3 puts the connection's repr first
        text = text.split(">: ", 1)[-1]
    return text


@dataclass
class _Backend:
    lane: Lane
    running: int = 0
    used: float = field(default_factory=time.monotonic)
    late: bool = False
    """Its last call ended at the deadline, not with an answer: one call in flight at most."""


@dataclass(frozen=True)
class Judged:
    """A check's verdict; ``trouble`` when the backend gave no usable answer."""

    status: CommitStatus
    trouble: bool = False


class GateCalls:
    """Bounded, deadlined calls to gate backends. Thread-safe."""

    def __init__(self, *, per_backend: int = 2, total: int = TOTAL, idle: float = IDLE) -> None:
        self.per_backend = per_backend
        self.total = max(total, 1)
        self.reserve = self.total // 4
        """Calls of the total that a ``late`` backend may not take."""
        self.idle = idle
        self._lock = threading.Lock()
        self._backends: dict[str, _Backend] = {}
        self._running = 0

    def call(self, backend: str, fn: Callable[[], T], *, timeout: float, grace: float = 1.0) -> T:
        """``fn()`` on ``backend``'s threads, its result within ``timeout`` seconds (given
        up after ``grace`` times that, for a call that keeps a deadline of its own).

        ``Unreachable`` when it does not answer in time or the calls it may have are all
        waiting on earlier ones; whatever ``fn`` raises otherwise.
        """
        try:
            return self.start(backend, fn, timeout=timeout, grace=grace).result(
                timeout=max(timeout * grace, 0.0) + 5.0
            )
        except FutureTimeout:  # the deadline's timer itself was late: a loaded machine
            raise Unreachable(f"no answer within {_seconds(timeout)}") from None

    def start(
        self, backend: str, fn: Callable[[], T], *, timeout: float, grace: float = 1.0
    ) -> Future[T]:
        """``call`` without waiting: a future settled by the answer, by what ``fn`` raised,
        or by ``Unreachable`` (refused at once, or given up at the deadline)."""
        future: Future[T] = Future()
        with self._lock:
            self._let_idle_go()
            slot = self._backends.get(backend)
            if slot is None:
                lane = Lane("promoter-gate-call", self.per_backend, idle=self.idle)
                slot = self._backends[backend] = _Backend(lane)
            refusal = self._refusal(slot)
            if refusal is None:
                slot.running += 1
                self._running += 1
                slot.used = time.monotonic()
        if refusal is not None:
            future.set_exception(Unreachable(refusal))
            return future
        limit = max(timeout * grace, 0.0)
        timer = threading.Timer(limit, self._give_up, (slot, future, timeout))
        timer.daemon = True
        context = contextvars.copy_context()  # its log lines keep the strategy's context
        slot.lane.submit(lambda: context.run(self._run, slot, fn, future, timer))
        timer.start()
        return future

    def _refusal(self, slot: _Backend) -> str | None:
        """Why a new call to ``slot`` is refused at once, if it is (under the lock)."""
        mine = 1 if slot.late else self.per_backend * LINE
        if slot.running >= mine:
            return f"no answer to {slot.running} earlier calls yet"
        room = self.total - self.reserve if slot.late else self.total
        if self._running >= room:
            return f"{self._running} gate calls in flight, the most the daemon makes at once"
        return None

    def _give_up(self, slot: _Backend, future: Future[T], timeout: float) -> None:
        if _settle(future, exc=Unreachable(f"no answer within {_seconds(timeout)}")):
            with self._lock:
                slot.late = True

    def _run(
        self, slot: _Backend, fn: Callable[[], T], future: Future[T], timer: threading.Timer
    ) -> None:
        answered = False
        try:
            if future.done():  # given up while it waited in line: not worth making now
                return
            answered = _settle(future, result=fn())
        except BaseException as exc:
            answered = _settle(future, exc=exc)
        finally:
            timer.cancel()
            with self._lock:
                slot.running -= 1
                self._running -= 1
                slot.used = time.monotonic()
                if answered:
                    slot.late = False

    def in_flight(self, backend: str) -> int:
        """Calls to ``backend`` that have not ended (answered or abandoned)."""
        with self._lock:
            slot = self._backends.get(backend)
            return slot.running if slot is not None else 0

    def in_flight_in_all(self) -> int:
        """Calls to every backend that have not ended."""
        with self._lock:
            return self._running

    def judge(
        self,
        *,
        key: str,
        what: str,
        backend: str,
        timeout: float,
        check: Callable[[], CommitStatus],
        url: str = "",
    ) -> Judged:
        """The verdict of gate ``key``: ``check()`` through ``call`` (given up ``GRACE``
        times its timeout at the latest); never raises.

        ``what`` names the backend in the verdict's words ("Argo CD", "check").
        """
        return self.judging(
            key=key, what=what, backend=backend, timeout=timeout, check=check, url=url
        ).result()

    def judging(
        self,
        *,
        key: str,
        what: str,
        backend: str,
        timeout: float,
        check: Callable[[], CommitStatus],
        url: str = "",
    ) -> Future[Judged]:
        """``judge`` without waiting: a future settled with the verdict (by the deadline)."""
        verdict: Future[Judged] = Future()
        answer = self.start(backend, check, timeout=timeout, grace=GRACE)

        def judged(done: Future[CommitStatus]) -> None:
            verdict.set_result(_judged(done, key=key, what=what, backend=backend, url=url))

        answer.add_done_callback(judged)
        return verdict

    def close(self) -> None:
        """Let every backend's threads go (calls in flight end on their own)."""
        with self._lock:
            backends, self._backends = self._backends, {}
        for slot in backends.values():
            slot.lane.close()

    def _let_idle_go(self) -> None:
        now = time.monotonic()
        for name, slot in list(self._backends.items()):
            if slot.running == 0 and now - slot.used > self.idle:
                del self._backends[name]
                slot.lane.close()


def _settle(
    future: Future[T], *, result: T | None = None, exc: BaseException | None = None
) -> bool:
    """Settle ``future`` unless the deadline or the answer already did; whether this did."""
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)  # type: ignore[arg-type]
    except InvalidStateError:
        return False
    return True


def _judged(done: Future[CommitStatus], *, key: str, what: str, backend: str, url: str) -> Judged:
    exc = done.exception()
    if exc is None:
        return Judged(done.result())
    if isinstance(exc, Garbage):
        reason = f"{what} answered garbage: {words_of(exc)}"
    else:
        if not isinstance(exc, TRANSPORT):  # a bug, or an answer no check foresaw
            log.warning(
                "gate check raised",
                extra={"gate": key, "backend": backend, "error": words_of(exc)},
                exc_info=exc,
            )
        reason = f"{what} not reachable: {words_of(exc)}"
    return Judged(pending(key, reason, url), trouble=True)


SOURCE = "promoter"


def verdict(key: str, phase: Phase, description: str, url: str = "") -> CommitStatus:
    """A gate's verdict as the commit status it is published as."""
    return CommitStatus(
        key=key, phase=phase, description=clip(description, 140), url=url, source=SOURCE
    )


def pending(key: str, description: str, url: str = "") -> CommitStatus:
    return verdict(key, Phase.PENDING, description, url)


def _seconds(value: float) -> str:
    return f"{value:g}s"
