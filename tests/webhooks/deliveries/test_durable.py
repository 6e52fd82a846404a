"""A delivery's id is on disk before it is answered: appended at once when the request is
alone in its turn of the loop, once for every request of a turn otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, MutableMapping
from pathlib import Path
from typing import Any, cast

import pytest
from starlette.routing import Route

from tests.webhooks.helpers import GITHUB_FIXTURES, GITHUB_SECRET, Hooks
from webhooks.deliveries.durable import Durable, _alone
from webhooks.deliveries.log import DeliveryLog
from webhooks.verify import GitHubSignature


def _journal(log: DeliveryLog) -> bytes:
    assert log._journal is not None
    return log._journal.path.read_bytes()


def test_a_delivery_alone_in_its_turn_is_on_disk_before_the_loop_turns(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    durable = Durable(log)

    async def deliver() -> asyncio.Future[bool]:
        assert log.record("github:alone")
        stored = durable.stored()
        assert stored.done()  # nothing was left for the end of the turn
        assert b"github:alone" in _journal(log)
        return stored

    assert asyncio.run(deliver()).result() is True
    log.close()


def test_deliveries_in_one_turn_still_share_one_append(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    assert log._journal is not None
    appends: list[bytes] = []
    append = log._journal.append

    def counted(data: bytes) -> None:
        appends.append(data)
        append(data)

    log._journal.append = counted  # type: ignore[method-assign]
    durable = Durable(log)

    async def deliver(n: int) -> bool:
        await asyncio.sleep(0)  # every request's task is ready in the same turn
        assert log.record(f"github:{n}")
        return await durable.stored()

    async def in_flight() -> list[bool]:
        return await asyncio.gather(*(deliver(n) for n in range(5)))

    assert asyncio.run(in_flight()) == [True] * 5
    assert len(appends) == 1
    log.close()


def test_an_append_that_fails_when_alone_says_so(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    durable = Durable(log)

    def disk_full() -> None:
        raise OSError(28, "No space left on device")

    log.persist = disk_full  # type: ignore[method-assign]

    async def deliver() -> bool:
        assert log.record("github:full")
        return await durable.stored()

    assert asyncio.run(deliver()) is False
    log.close()


def test_a_loop_without_a_queue_of_ready_callbacks_is_never_taken_as_alone() -> None:
    class Other:  # uvloop's loop keeps its queue out of Python's reach
        pass

    assert _alone(Other()) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("payload", ["push/with-new-branch.payload.json", "status/payload.json"])
def test_a_lone_delivery_is_answered_without_giving_the_loop_a_turn(
    hooks: Hooks, payload: str
) -> None:
    routes = hooks.routes
    receiver = next(r.app for r in routes if isinstance(r, Route) and r.path == "/webhooks/github")
    body = (GITHUB_FIXTURES / payload).read_bytes()
    event = payload.split("/")[0]
    headers = [
        (b"content-type", b"application/json"),
        (b"x-github-event", event.encode()),
        (b"x-github-delivery", b"lone-1"),
        (b"x-hub-signature-256", GitHubSignature.sign(GITHUB_SECRET, body).encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {"type": "http", "method": "POST", "path": "/webhooks/github", "headers": headers}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    async def one_step() -> None:
        handling = cast(Coroutine[Any, Any, None], receiver(scope, receive, send))
        try:
            with pytest.raises(StopIteration):  # it ran to its end in one step: no await waited
                handling.send(None)
        finally:
            handling.close()

    asyncio.run(one_step())
    assert [m.get("status") for m in sent] == [202, None]
    assert sent[1]["body"] == b'{"result":"accepted"}'
    assert b"github:lone-1" in _journal(routes.deliveries)
