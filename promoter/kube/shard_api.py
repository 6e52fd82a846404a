"""The HTTP side of a sharded replica: any replica answers for all of them.

* ``POST /internal/v1/keys``: keys another replica forwarded (signed, ``peers``).
* ``GET /api/v1/shards``: the members, the assignment and who holds each shard.
* ``GET /api/v1/strategies``: every strategy, each reported by the replica that works on
  it (asked with ``?scope=local``, all at once); those whose owner did not answer are
  listed with their owner and no state.
* ``GET /api/v1/strategies/{name}``, ``/dashboard/{name}``, ``/strategies/{name}``, and
  the writes
  (``POST .../statuses``, ``POST /api/v1/strategies/{name}/{operation}``) are passed to
  the owner when it is another replica, so that they act where the work is done.

Everything else falls through to the replica's own app.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from promoter.http.views import strategy_summary
from promoter.kube.assignment import loads
from promoter.kube.leases import shard_lease
from promoter.kube.peers import PATH as KEYS_PATH
from promoter.kube.peers import SIGNATURE, verify

if TYPE_CHECKING:
    from promoter.kube.controller import Controller

PASSED = "x-promoter-passed-by"
"""Set on a request passed to the owner: it is never passed on a second time."""
STRATEGY = re.compile(r"^/(?:api/v1/strategies|dashboard|strategies)/([^/]+)(?:/[a-z-]+)?$")
STATUSES = re.compile(r"^/api/v1/repositories/([^/]+)/commits/[^/]+/statuses$")


class ShardRoutes:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        assert controller.sharding is not None
        self.sharding = controller.sharding
        self._client = httpx.AsyncClient(timeout=5.0)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the request when it is one of ours; False to let the app answer it."""
        request = Request(scope, receive)
        path, method = request.url.path, request.method
        response: Response | None = None
        if path == KEYS_PATH and method == "POST":
            response = await self._keys(request)
        elif path == "/api/v1/shards" and method == "GET":
            response = JSONResponse(self.table())
        elif path == "/api/v1/strategies" and method == "GET":
            response = await self._strategies(request)
        elif PASSED not in request.headers:
            response = await self._pass_to_owner(request)
        if response is None:
            return False
        await response(scope, receive, send)
        return True

    # --- forwarded keys -------------------------------------------------------------------

    async def _keys(self, request: Request) -> Response:
        body = await request.body()
        token = self.sharding.settings.peer_token
        if not verify(token, request.headers.get(SIGNATURE, ""), body):
            return JSONResponse({"error": "not signed by a replica"}, status_code=403)
        try:
            data = json.loads(body)
            keys = [str(k) for k in data["keys"]]
            wake = bool(data.get("wake"))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "body must be {keys: [...]}"}, status_code=400)
        rest = self.controller.runtime.receive(keys, wake=wake)
        if rest:
            self.controller.forwarder.forward(rest)
        return JSONResponse({"accepted": len(keys) - len(rest)}, status_code=202)

    # --- the shards -------------------------------------------------------------------------

    def table(self) -> dict[str, Any]:
        coordinator = self.sharding.coordinator
        table = coordinator.table
        weights = table.work.weights
        per_member = loads(table.assigned, weights)
        held: dict[str, float] = {}
        for shard, holder in table.holders.items():
            if holder:
                held[holder] = held.get(holder, 0.0) + weights.get(shard, 0.0)
        total = sum(weights.values())
        average = total / len(table.members) if table.members else 0.0
        return {
            "identity": self.sharding.identity,
            "shardCount": self.sharding.settings.count,
            "balance": round(max(per_member.values()) / average, 3) if average else None,
            "members": [
                {
                    "identity": member,
                    "address": address,
                    "self": member == self.sharding.identity,
                    "assignedStrategies": int(per_member.get(member, 0)),
                    "heldStrategies": int(held.get(member, 0)),
                    "heldShards": sum(1 for h in table.holders.values() if h == member),
                }
                for member, address in sorted(table.members.items())
            ],
            "shards": [
                {
                    "name": shard,
                    "lease": shard_lease(self.sharding.settings.group, shard),
                    "holder": table.holders.get(shard) or None,
                    "assigned": table.assigned.get(shard),
                    "strategies": int(weights.get(shard, 0)),
                    "repositories": sorted(table.work.repositories.get(shard, [])),
                }
                for shard in sorted(weights)
            ],
        }

    # --- strategies, wherever they are worked on --------------------------------------------

    def _local(self) -> list[dict[str, Any]]:
        runtime = self.controller.runtime
        me = self.sharding.identity
        return [
            strategy_summary(s, runtime.view(s.name), owner=me)
            for s in runtime.strategies()
            if runtime.mine(s.name)
        ]

    async def _strategies(self, request: Request) -> Response:
        local = await run_in_threadpool(self._local)
        if request.query_params.get("scope") == "local":
            return JSONResponse({"strategies": local})
        members = self.sharding.coordinator.table.members
        others = [a for m, a in sorted(members.items()) if m != self.sharding.identity and a]
        answers = await asyncio.gather(*(self._ask(a) for a in others))
        found = {s["name"]: s for s in local}
        for answer in answers:
            found.update({s["name"]: s for s in answer})
        runtime = self.controller.runtime
        listed = [
            found.get(s.name) or strategy_summary(s, None, owner=self.sharding.owner(s.name))
            for s in runtime.strategies()
        ]
        return JSONResponse({"strategies": listed})

    async def _ask(self, address: str) -> list[dict[str, Any]]:
        try:
            answer = await self._client.get(address.rstrip("/") + "/api/v1/strategies?scope=local")
            strategies: list[dict[str, Any]] = answer.json()["strategies"]
        except (httpx.HTTPError, ValueError, KeyError):
            return []
        return strategies

    async def _pass_to_owner(self, request: Request) -> Response | None:
        """A request about another replica's strategy or repository, answered by it."""
        runtime = self.controller.runtime
        path = request.url.path
        located = None
        if (match := STRATEGY.match(path)) and runtime.config.strategy(match[1]) is not None:
            if runtime.mine(match[1]):
                return None
            located = self.sharding.locate(match[1])
        elif (match := STATUSES.match(path)) and request.method == "POST":
            if self.sharding.fence.owns(match[1]) or not runtime.has_repository(match[1]):
                return None
            located = self.sharding.locate_repository(match[1])
        else:
            return None
        if located is None or not located[1]:
            return JSONResponse(
                {"error": "the replica that works on it is changing; try again"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        return await self._proxy(request, located[1])

    async def _proxy(self, request: Request, address: str) -> Response:
        url = address.rstrip("/") + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        keep = ("authorization", "content-type", "accept")
        headers = {k: v for k, v in request.headers.items() if k in keep}
        headers[PASSED] = self.sharding.identity
        try:
            answer = await self._client.request(
                request.method, url, content=await request.body(), headers=headers
            )
        except httpx.HTTPError:
            return JSONResponse(
                {"error": "the replica that works on it did not answer; try again"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        passed = {k: v for k, v in answer.headers.items() if k in ("content-type", "retry-after")}
        return Response(answer.content, status_code=answer.status_code, headers=passed)

    async def close(self) -> None:
        await self._client.aclose()
