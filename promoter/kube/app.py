"""The HTTP app of a replica: /healthz and /readyz of its own, the rest from the Runtime.

Every replica serves webhooks and the API, leader or not (with one leader, a
non-leader forwards the work through the strategy's annotation; sharded, to the
replica that holds its shard). The replica's mode answers first what is its to answer
(``Mode.routes``: sharded, ``promoter.kube.shards.routes`` answers for all replicas).
``/readyz`` is 200 once the watches have listed everything, on every replica so that
the Service keeps them all, and says in its body (and the ``X-Promoter-Leader`` header)
whether this replica leads and what its mode says (sharded: how many shards it holds).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from promoter.kube.controller import Controller


class ReplicaApp:
    """An ASGI app; its lifespan starts and stops the controller."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.routes = controller.mode.routes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope.get("path", "")
        if scope["type"] == "http" and path in ("/healthz", "/readyz"):
            await self._probe(path, send)
            return
        if scope["type"] == "http" and await self.routes.handle(scope, receive, send):
            return
        app = self.controller.runtime.app
        assert app is not None
        await app(scope, receive, send)

    async def _probe(self, path: str, send: Send) -> None:
        c = self.controller
        body: dict[str, Any] = {"status": "ok"}
        code = 200
        if path == "/readyz":
            ready = c.ready()
            body = {
                "ready": ready,
                "leader": c.leading(),
                "identity": c.settings.identity,
                "strategies": len(c.assembled.config.promotion_strategies),
                "invalid": len(c.assembled.problems),
                **c.mode.describe(),
            }
            code = 200 if ready else 503
        raw = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(raw)).encode()),
        ]
        if path == "/readyz":
            headers.append((b"x-promoter-leader", b"true" if c.leading() else b"false"))
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": raw})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await run_in_threadpool(self.controller.start)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await run_in_threadpool(self.controller.stop)
                await self.routes.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
