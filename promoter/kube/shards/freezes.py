"""Freezes on sharded replicas: each is written by the replicas whose repositories it
covers.

A freeze (or its lifting) is a ledger note in each repository it covers, and only the
replica holding a repository's shard may push there. So ``POST /api/v1/freeze`` and
``/unfreeze`` naming a strategy are passed to the replica that works on it
(``passing``); one of everything is done here first (this replica's checks of the
caller, its own repositories) and, when that succeeded, passed to every other live
replica, which writes it in its own. The answer names the strategies of all of them;
a replica that did not answer makes it a 503 naming it (the freeze stands where it was
written: send it again). Lifting a freeze some replica does not have is no failure,
as long as one had it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope

from promoter.http import BodyTooLarge, read_body
from promoter.kube.shards.forwarding.passing import replay

PATHS = ("/api/v1/freeze", "/api/v1/unfreeze")

Pass = Callable[[Request, str], Awaitable[Response]]
"""Pass a request to the replica at an address; its answer."""


def named_strategy(body: bytes) -> str | None:
    """The strategy a freeze's body names; None for everything (or a body the API will
    refuse, which this replica answers)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    found = data.get("strategy") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


async def body_of(scope: Scope, receive: Receive) -> tuple[bytes | None, Receive]:
    """The body (None when it is too large) and a ``receive`` that gives it again."""
    try:
        body: bytes | None = await read_body(Request(scope, receive))
    except BodyTooLarge:
        body = None
    return body, replay(body or b"")


async def everywhere(
    scope: Scope, body: bytes, *, app: ASGIApp, others: list[str], pass_on: Pass
) -> Response:
    """A freeze of everything, or its lifting: here, then on every other replica once
    it succeeded here (lifting: or when there was nothing to lift here)."""
    status, headers, content = await local(app, scope, body)
    nothing_here = scope["path"].endswith("/unfreeze") and status == 404
    if (status >= 300 and not nothing_here) or not others:
        return Response(content, status_code=status, headers=headers)
    answers = await asyncio.gather(
        *(pass_on(Request(scope, replay(body)), address) for address in others)
    )
    failed = [
        address
        for address, answer in zip(others, answers, strict=True)
        if answer.status_code >= 300 and answer.status_code != 404
    ]
    if failed:
        return JSONResponse(
            {"error": f"done here, not yet by {', '.join(failed)}; send it again"},
            status_code=503,
            headers={"Retry-After": "1"},
        )
    done = [] if nothing_here else [content]
    done += [bytes(a.body) for a in answers if a.status_code < 300]
    if not done:
        return Response(content, status_code=status, headers=headers)
    first = _answer(done[0])
    names = {name for d in done for name in _answer(d).get("strategies", [])}
    return JSONResponse({**first, "strategies": sorted(names)})


def _answer(content: bytes) -> dict[str, Any]:
    try:
        found = json.loads(content)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


async def local(app: ASGIApp, scope: Scope, body: bytes) -> tuple[int, dict[str, str], bytes]:
    """This replica's own answer to the request: status, headers, body."""
    status = 500
    headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            for key, value in message.get("headers", []):
                name = key.decode("latin-1").lower()
                if name in ("content-type", "retry-after", "www-authenticate"):
                    headers[name] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, replay(body), send)
    return status, headers, b"".join(chunks)
