"""The one helper through which every SCM call goes: counted, logged, errors translated.

A plugin wraps each remote call in ``with calls.call("operation"):``; the block's
exceptions are translated by the plugin's ``translate`` function into
``promoter.errors.Scm*`` (original kept as ``__cause__``), and the outcome is
counted in ``promoter_scm_calls_total{provider,operation,outcome}`` and timed in
``promoter_scm_call_duration_seconds{provider,operation}``. Every error that
leaves a call, with its causes, is scrubbed of every secret the process knows
(``promoter.redaction``): an SCM that echoes a token back in an error body cannot put it
into the API, ``/readyz`` or a log line, whichever plugin made the call. A rate limit
pauses every call of the instance (its credential) for its ``retry_after``.

A plugin that knows its SCM's limits gives ``ScmCalls`` a ``CredentialBudget`` and each
call its ``Cost``: the call is admitted first (it may wait briefly, or be refused with
``RateBudgetWait`` without reaching the SCM, counted as ``throttled``), and the
``Receipt`` the block gets hands the answer's status and headers back to the budget.

A call made within a write's hold (a sharded replica's, ``scm_plugins.hold``) is checked
against it right before it goes out, once any wait for the budget is over: a hold that
lapsed meanwhile refuses it, counted as ``fenced``, and gives back what the budget
counted for it. The block asks the ``Receipt`` for its request's deadline
(``Receipt.deadline``), which ends before the hold does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import suppress

from prometheus_client import Counter, Histogram

from promoter.activity import ACTIVITY
from promoter.errors import (
    RateBudgetWait,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.metrics import SCM_CALL_DURATION, SCM_CALLS_TOTAL, SCM_RATE_LIMIT_REMAINING
from promoter.redaction import KNOWN
from scm_plugins import hold
from scm_plugins.budget import Cost, CredentialBudget, Throttled, Ticket
from scm_plugins.limiter import CredentialPause

log = logging.getLogger("promoter.scm")

Translator = Callable[[BaseException], ScmError | None]
"""Maps a library exception to an ScmError, or None to let it through unchanged."""


def _outcome(error: BaseException | None) -> str:
    if error is None:
        return "success"
    for cls, name in (
        (ScmRateLimited, "rate_limited"),
        (ScmConflict, "conflict"),
        (ScmNotFound, "not_found"),
        (ScmUnavailable, "unavailable"),
    ):
        if isinstance(error, cls):
            return name
    return "error"


class Receipt:
    """Handed to a call's block: what the SCM answered, for the gauge and the budget."""

    def __init__(self, calls: ScmCalls, ticket: Ticket | None) -> None:
        self._calls = calls
        self._ticket = ticket

    def answered(self, status: int, headers: Mapping[str, str]) -> None:
        self._calls.record_rate_limit(headers)
        if self._ticket is not None:
            self._ticket.answered(status, headers)

    @staticmethod
    def deadline(seconds: float) -> float:
        """The request's deadline: ``seconds``, or less within a write's hold, so that it
        ends before the hold does (raises when the hold lapsed meanwhile)."""
        return hold.deadline(seconds)


class ScmCalls:
    """Counts and translates the calls of one provider instance."""

    def __init__(
        self, provider: str, translate: Translator, *, budget: CredentialBudget | None = None
    ) -> None:
        self.provider = provider
        self._translate = translate
        self.pause = CredentialPause()
        """Shared by every call of this instance: its credential's rate-limit pause."""
        self.budget = budget
        """Shared by every call of this instance that states its cost."""
        self._counted: dict[tuple[str, str], Counter] = {}
        self._timed: dict[str, Histogram] = {}

    def _count(self, operation: str, outcome: str) -> None:
        """``promoter_scm_calls_total`` + 1; the labelled child is looked up once."""
        child = self._counted.get((operation, outcome))
        if child is None:
            child = SCM_CALLS_TOTAL.labels(self.provider, operation, outcome)
            self._counted[(operation, outcome)] = child
        child.inc()

    def _time(self, operation: str, took: float) -> None:
        child = self._timed.get(operation)
        if child is None:
            child = self._timed[operation] = SCM_CALL_DURATION.labels(self.provider, operation)
        child.observe(took)

    def call(self, operation: str, cost: Cost | None = None, /, **fields: object) -> _Call:
        """The block of one remote call: ``with calls.call("operation") as receipt:``."""
        return _Call(self, operation, cost, fields)

    def _started(
        self, operation: str, cost: Cost | None, fields: Mapping[str, object]
    ) -> Ticket | None:
        """Before the call goes out: the rate-limit pause, the budget, the write's hold."""
        waiting = self.pause.remaining()
        if waiting > 0:
            self._count(operation, "paused")
            raise ScmRateLimited(
                f"{self.provider} calls wait {waiting:.1f} s more after a rate limit",
                retry_after=waiting,
            )
        ticket = self._admit(operation, cost, fields)
        try:
            hold.before_send()  # after any wait for the budget: the hold may have lapsed
        except Exception:
            if ticket is not None:
                ticket.cancel()
            self._count(operation, "fenced")
            raise
        return ticket

    def _failed(self, exc: Exception) -> Exception:
        """What a call's exception leaves the block as: scrubbed of secrets, translated
        into an ``ScmError`` when the plugin knows it; a rate limit pauses the credential."""
        KNOWN.scrub_exception(exc)
        error = exc if isinstance(exc, ScmError) else (self._translate(exc) or exc)
        if error is not exc:
            KNOWN.scrub_exception(error)
        if isinstance(error, ScmRateLimited):
            self.pause.pause(error.retry_after)
        return error

    def _ended(
        self,
        operation: str,
        fields: Mapping[str, object],
        ticket: Ticket | None,
        error: BaseException | None,
        took: float,
    ) -> None:
        if ticket is not None:
            ticket.close()
        outcome = _outcome(error)
        self._count(operation, outcome)
        self._time(operation, took)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "scm call",
                extra={
                    "provider": self.provider,
                    "operation": operation,
                    "outcome": outcome,
                    "duration_ms": round(took * 1000, 2),
                    **fields,
                },
            )

    def refused(self, operation: str) -> None:
        """A call the caller refused before it went out (a plugin's outage pause): counted
        as ``paused``, like one refused by the rate-limit pause."""
        self._count(operation, "paused")

    def _admit(
        self, operation: str, cost: Cost | None, fields: Mapping[str, object]
    ) -> Ticket | None:
        if self.budget is None or cost is None:
            return None
        try:
            return self.budget.admit(cost)
        except Throttled as exc:
            self._count(operation, "throttled")
            log.debug(
                "scm call throttled",
                extra={
                    "provider": self.provider,
                    "operation": operation,
                    "priority": cost.priority.name.lower(),
                    "limit": exc.limit,
                    "retry_after": round(exc.retry_after, 3),
                    **fields,
                },
            )
            raise RateBudgetWait(
                f"{self.provider} calls wait {exc.retry_after:.1f} s for room in the "
                f"credential's {exc.limit} limit",
                retry_after=exc.retry_after,
            ) from None

    def record_rate_limit(self, headers: Mapping[str, str]) -> None:
        """Update the remaining-budget gauge from response headers, when present."""
        for name in ("x-ratelimit-remaining", "ratelimit-remaining"):
            for key, value in headers.items():
                if key.lower() == name:
                    with suppress(ValueError):
                        SCM_RATE_LIMIT_REMAINING.labels(self.provider).set(float(value))
                    return


class _Call:
    """One call's ``with`` block (``ScmCalls.call``): a class, not a generator, for the
    thousands of calls of a cold start."""

    __slots__ = ("_calls", "_cost", "_fields", "_operation", "_started", "_ticket", "_work")

    def __init__(
        self, calls: ScmCalls, operation: str, cost: Cost | None, fields: Mapping[str, object]
    ) -> None:
        self._calls = calls
        self._operation = operation
        self._cost = cost
        self._fields = fields

    def __enter__(self) -> Receipt:
        calls = self._calls
        self._started = time.perf_counter()
        self._ticket = calls._started(self._operation, self._cost, self._fields)
        self._work = ACTIVITY.call_begins(calls.provider, self._operation)
        return Receipt(calls, self._ticket)

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        ACTIVITY.call_ends(self._work)
        calls = self._calls
        error = calls._failed(exc) if isinstance(exc, Exception) else None
        took = time.perf_counter() - self._started
        calls._ended(self._operation, self._fields, self._ticket, error, took)
        if error is not None and error is not exc:
            raise error from exc
