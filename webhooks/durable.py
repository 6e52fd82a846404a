"""Waiting, on the event loop, until the delivery log has persisted what a request recorded.

The requests that record an id in the same turn of the loop are answered after one
``DeliveryLog.persist``, scheduled for the end of that turn: the deliveries in flight
together cost one append to the journal (a single ``write``) and no thread hop.
"""

from __future__ import annotations

import asyncio

from webhooks.deliveries import DeliveryLog


class Durable:
    """``await durable.stored()`` after ``log.record(id)`` returned True, with no ``await``
    in between: the id is then among the entries that the awaited append writes."""

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        self._waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}

    def stored(self) -> asyncio.Future[bool]:
        """True once the ids recorded so far are persisted; False when the write failed."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        waiting = self._waiting.get(loop)
        if waiting is None:
            waiting = self._waiting[loop] = []
            loop.call_soon(self._commit, loop)
        waiting.append(future)
        return future

    def _commit(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting = self._waiting.pop(loop)  # ids recorded from now on wait for the next append
        try:
            self._log.persist()
            stored = True
        except OSError:
            stored = False
        for future in waiting:
            if not future.done():  # its request may have been cancelled meanwhile
                future.set_result(stored)
