"""The HTTP side of a sharded replica: any replica answers for all of them.

* ``POST /internal/v1/keys``: keys another replica forwarded (``peers``): a replica's
  call, signed with the replicas' secret, never a browser's (one carrying ``Origin`` or
  ``Sec-Fetch-*`` is refused, and its body must be declared JSON).
* ``GET /api/v1/shards`` (for a caller who may read some strategy) and
  ``GET /api/v1/strategies``: every replica's (``views``).
* ``POST /api/v1/freeze`` and ``/unfreeze``: by the replicas whose repositories the
  freeze covers (``freezes``).
* ``GET /api/v1/strategies/{name}``, ``/dashboard/{name}``, ``/strategies/{name}``, a
  strategy's audit (``/api/v1/audit?strategy=``, ``/audit?strategy=``), and
  the writes (``POST .../statuses``, ``POST /api/v1/strategies/{name}/{operation}``) are
  passed to the owner when it is another replica (``passing``), so that they act
  where the work is done, after the owner's own checks of the caller. One that comes
  while the shard moves waits for its next owner (up to ``MOVE_WAIT``), then is
  refused 503 with ``Retry-After``.

What this module answers goes through the same browser guard as the daemon's own
routes (the Host check and the security headers). Everything else falls through to
the replica's own app. The routes read the replica's shards through ``views.Shards``
and its runtime of the moment through ``runtime()``, nothing else of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from promoter.http import MOVED, Api, BrowserGuard, Hosts, json_only
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.shards.forwarding.passing import (
    PASSED,
    pass_on,
    receive_passed,
    replay,
    unavailable,
)
from promoter.kube.shards.forwarding.peers import KEYS
from promoter.kube.shards.forwarding.peers import PATH as KEYS_PATH
from promoter.kube.shards.forwarding.signing import SIGNATURE, Verifier
from promoter.kube.shards.freezes import PATHS as FREEZES
from promoter.kube.shards.freezes import body_of, everywhere, named_strategy
from promoter.kube.shards.views import Listing, Shards, others, shard_table

log = logging.getLogger("promoter.kube.shard_api")

STRATEGY = re.compile(r"^/(?:api/v1/strategies|dashboard|strategies)/([^/]+)(?:/[a-z-]+)?$")
STATUSES = re.compile(r"^/api/v1/repositories/([^/]+)/commits/[^/]+/statuses$")
AUDIT = ("/api/v1/audit", "/audit")
"""Passed to the owner when they ask for one strategy's audit (``?strategy=``)."""
BROWSER = ("origin", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest")
"""Headers a browser sends with a fetch (and a form), which a replica never does."""
MOVE_WAIT = 5.0
"""Seconds a request about a strategy whose shard is moving waits for its next owner."""
MOVE_POLL = 0.02
"""Seconds between two looks at the shard's holder while it moves."""
clock: Callable[[], float] = time.monotonic
"""The clock ``MOVE_WAIT`` is counted on (a test gives one it moves itself)."""

Answer = Callable[[Request], Awaitable[Response]]


class ShardRoutes:
    """A ``promoter.kube.runtime.mode.Routes``; ``runtime()``: the replica's of the moment."""

    def __init__(self, shards: Shards, *, runtime: Callable[[], ClusterRuntime]) -> None:
        self.shards = shards
        self.runtime = runtime
        self._client = httpx.AsyncClient(timeout=5.0)
        self.verifier = Verifier(shards.settings.peer_token, address=shards.settings.address)
        """Checks every call another replica signed for this one (once each)."""
        self.listing = Listing(shards, runtime, self._api, self._client, self.verifier)

    @property
    def token(self) -> str | None:
        return self.shards.settings.peer_token

    def _api(self) -> Api:
        api = self.runtime().api
        assert api is not None
        return api

    def _app(self) -> ASGIApp:
        app = self.runtime().app
        assert app is not None
        return app

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the request when it is one of ours; False to let the app answer it."""
        if any(k == PASSED.encode() for k, _ in scope["headers"]):
            await receive_passed(scope, receive, send, app=self._app(), verifier=self.verifier)
            return True
        if scope["method"] == "POST" and scope["path"] in FREEZES:
            await self._freeze(scope, receive, send)
            return True
        route = lambda: self._route(Request(scope))  # noqa: E731
        deadline = clock() + MOVE_WAIT
        answer = await self._settled(route, deadline=deadline)
        if _movable(scope):
            await self._until_placed(scope, receive, send, route, answer, deadline=deadline)
            return True
        if answer is None:
            return False

        async def respond(scope: Scope, receive: Receive, send: Send) -> None:
            response = await answer(Request(scope, receive))
            await response(scope, receive, send)

        await BrowserGuard(respond, hosts=self._api().access.hosts)(scope, receive, send)
        return True

    async def _freeze(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A freeze or its lifting, by the replicas whose repositories it covers."""
        app = self._app()
        body, again = await body_of(scope, receive)
        strategy = named_strategy(body or b"")
        runtime = self.runtime()
        if body is None or (strategy is not None and runtime.config.strategy(strategy) is None):
            await app(scope, again, send)  # the API refuses it
            return
        answer: Answer
        if strategy is None:
            addresses = others(self.shards)

            async def answer(request: Request) -> Response:
                return await everywhere(
                    scope, body, app=app, others=addresses, pass_on=self._pass_to
                )
        else:
            found = await self._settled(
                lambda: self._strategy_route(strategy), deadline=clock() + MOVE_WAIT
            )
            if found is None:
                await app(scope, again, send)
                return
            answer = found

        async def respond(scope: Scope, receive: Receive, send: Send) -> None:
            response = await answer(Request(scope, receive))
            await response(scope, receive, send)

        await BrowserGuard(respond, hosts=self._api().access.hosts)(scope, again, send)

    async def _pass_to(self, request: Request, address: str) -> Response:
        identity = self.shards.identity
        return await pass_on(self._client, request, address, identity=identity, token=self.token)

    def _route(self, request: Request) -> Answer | None:
        path, method = request.url.path, request.method
        if path == KEYS_PATH and method == "POST":
            return self._keys
        if path == "/api/v1/shards" and method == "GET":
            return self._shards
        if path == "/api/v1/strategies" and method == "GET":
            return self.listing.strategies
        return self._owner_elsewhere(request)

    # --- forwarded keys -------------------------------------------------------------------

    async def _keys(self, request: Request) -> Response:
        if any(h in request.headers for h in BROWSER):
            return JSONResponse({"error": "a call between replicas; no browser's"}, status_code=403)
        body = await request.body()
        signature = request.headers.get(SIGNATURE, "")
        if self.verifier.verify(signature, body, what=KEYS, headers=request.headers) is None:
            return JSONResponse({"error": "not signed by a replica"}, status_code=403)
        if not json_only(request):
            return JSONResponse({"error": "the body must be JSON"}, status_code=415)
        try:
            data = json.loads(body)
            keys = [str(k) for k in data["keys"]]
            wake = bool(data.get("wake"))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "body must be {keys: [...]}"}, status_code=400)
        rest = self.runtime().receive(keys, wake=wake)
        if rest:
            self.shards.annotate(rest)
        return JSONResponse({"accepted": len(keys) - len(rest)}, status_code=202)

    async def _shards(self, request: Request) -> Response:
        who = await self._api().reader(request)
        if isinstance(who, Response):
            return who
        return JSONResponse(shard_table(self.shards))

    def _owner_elsewhere(self, request: Request) -> Answer | None:
        """How to answer a request about another replica's strategy or repository (by
        that replica); None when it is this replica's, or about no strategy."""
        runtime = self.runtime()
        path = request.url.path
        name = request.query_params.get("strategy") if path in AUDIT else None
        if (match := STRATEGY.match(path)) and runtime.config.strategy(match[1]) is not None:
            return self._strategy_route(match[1])
        if name is not None and runtime.config.strategy(name) is not None:
            return self._strategy_route(name)
        if (match := STATUSES.match(path)) and request.method == "POST":
            if self.shards.owns(match[1]) or not runtime.has_repository(match[1]):
                return None
            return self._to_owner(self.shards.locate_repository(match[1]))
        return None

    def _strategy_route(self, strategy: str) -> Answer | None:
        """None when this replica works on ``strategy``, else how its owner answers."""
        if self.runtime().mine(strategy):
            return None
        return self._to_owner(self.shards.locate(strategy))

    def _to_owner(self, located: tuple[str, str] | None) -> Answer:
        """Passed to the replica ``located`` (identity, address); ``_changing`` while
        its shard has no holder that can answer (a move under way)."""
        if located is None or not located[1] or located[0] == self.shards.identity:
            return self._changing
        address = located[1]

        async def passed(request: Request) -> Response:
            return await self._pass_to(request, address)

        return passed

    async def _until_placed(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        route: Callable[[], Answer | None],
        answer: Answer | None,
        *,
        deadline: float,
    ) -> None:
        """A write about one strategy or repository, answered here (``answer`` None) or
        passed to its owner. When the replica that had it refused it because its shard
        began to move (``moved``: nothing written), it is sent to the next owner until
        ``deadline`` (``MOVE_WAIT`` after it arrived, in all), instead of a 503 for the
        caller to retry."""
        body, _ = await body_of(scope, receive)
        hosts = self._api().access.hosts
        if body is None:
            too_large = JSONResponse({"error": "the body is too large"}, status_code=413)
            await BrowserGuard(too_large, hosts=hosts)(scope, receive, send)
            return
        while True:
            messages = await _captured(self._answering(answer, hosts), scope, body)
            if not _says_moved(messages) or clock() >= deadline:
                for message in messages:
                    await send(message)
                return
            log.info("moved while answering: sent on", extra={"path": scope["path"]})
            await asyncio.sleep(MOVE_POLL)
            answer = await self._settled(route, deadline=deadline)

    def _answering(self, answer: Answer | None, hosts: Hosts) -> ASGIApp:
        """The app that answers: this replica's own, or one that passes to ``answer``."""
        if answer is None:
            return self._app()
        passed = answer

        async def respond(scope: Scope, receive: Receive, send: Send) -> None:
            response = await passed(Request(scope, receive))
            await response(scope, receive, send)

        return BrowserGuard(respond, hosts=hosts)

    async def _settled(
        self, route: Callable[[], Answer | None], *, deadline: float
    ) -> Answer | None:
        """``route()`` once the shard it names has a holder: a request that arrives while
        its shard moves (the old owner finishing its writes, the next one taking the
        Lease, tens of milliseconds to a few seconds) waits for the move to end, until
        ``deadline`` (``MOVE_WAIT`` after it came), rather than being refused at once: a
        CI job's status post in a rolling update is answered, not told to try again (few
        retry). Past the wait, ``_changing`` (503, ``Retry-After``)."""
        answer = route()
        while answer == self._changing and clock() < deadline:
            await asyncio.sleep(MOVE_POLL)
            answer = route()
        return answer

    async def _changing(self, request: Request) -> Response:
        return unavailable("the replica that works on it is changing")

    async def close(self) -> None:
        await self._client.aclose()


def _movable(scope: Scope) -> bool:
    """A write about one strategy or repository (a status, an operation): what the
    fence can refuse once it began here, when the shard moves meanwhile."""
    path = scope["path"]
    return scope["method"] == "POST" and bool(STATUSES.match(path) or STRATEGY.match(path))


async def _captured(app: ASGIApp, scope: Scope, body: bytes) -> list[Message]:
    """``app``'s answer to the request (with ``body``), kept to be sent or dropped."""
    messages: list[Message] = []

    async def keep(message: Message) -> None:
        messages.append(message)

    await app(scope, replay(body), keep)
    return messages


def _says_moved(messages: list[Message]) -> bool:
    start = next((m for m in messages if m["type"] == "http.response.start"), None)
    if start is None or start["status"] != 503:
        return False
    return any(k.decode("latin-1").lower() == MOVED for k, _ in start.get("headers", []))
