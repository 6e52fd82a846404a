"""Waiting, on the event loop, until the delivery log has persisted what a request recorded.

The requests that record an id in the same turn of the loop are answered after one
``DeliveryLog.persist``, scheduled for the end of that turn: the deliveries in flight
together cost one append to the journal (a single ``write``) and no thread hop.

A request that nothing else can join in its turn appends at once and goes on without
giving the loop a turn: that saves a future, a callback and two passes of the loop
(docs/performance.md, section 4, "A delivery alone in its turn of the loop"). It is
alone when
asyncio's loop has nothing else ready to run in this turn (its queue of ready
callbacks, ``_ready``, is empty): another request's task would be there. On a loop
without that queue (uvloop), every append waits for the end of the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sized

from webhooks.deliveries.log import DeliveryLog


def _alone(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether nothing else is ready to run in this turn of ``loop``."""
    ready: Sized | None = getattr(loop, "_ready", None)
    return ready is not None and not ready


class Durable:
    """``await durable.stored()`` after ``log.record(id)`` returned True, with no ``await``
    in between: the id is then among the entries that the awaited append writes."""

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        self._waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}

    def stored(self) -> asyncio.Future[bool]:
        """True once the ids recorded so far are persisted; False when the write failed.

        Already done when the append could be made at once (see the module's text).
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        waiting = self._waiting.get(loop)
        if waiting is None:
            if _alone(loop):
                future.set_result(self._persist())
                return future
            waiting = self._waiting[loop] = []
            loop.call_soon(self._commit, loop)
        waiting.append(future)
        return future

    def _persist(self) -> bool:
        try:
            self._log.persist()
        except OSError:
            return False
        return True

    def _commit(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting = self._waiting.pop(loop)  # ids recorded from now on wait for the next append
        stored = self._persist()
        for future in waiting:
            if not future.done():  # its request may have been cancelled meanwhile
                future.set_result(stored)
