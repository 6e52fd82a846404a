"""What a sharded replica shows of all of them: the shards, and every strategy.

* ``GET /api/v1/shards``: the members, the assignment and who holds each shard
  (``shard_table``).
* ``GET /api/v1/strategies``: every strategy the caller may read, each reported by the
  replica that works on it (asked with ``?scope=local``, all at once, in a call signed
  as a replica's); those whose owner did not answer are listed with their owner and no
  state (``Listing``).

``Shards`` is what the HTTP side of a replica reads of its shards (``ShardedMode`` is
one): nothing else of the replica.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from promoter.http import Api, strategy_summary
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.shards.assignment import Table, loads
from promoter.kube.shards.forwarding.signing import SIGNATURE, Verifier, sign
from promoter.kube.shards.leases import shard_lease
from promoter.kube.shards.settings import ShardSettings

LOCAL = "/api/v1/strategies?scope=local"


class Shards(Protocol):
    """A sharded replica's shards, as its HTTP side reads them."""

    identity: str
    settings: ShardSettings

    def table(self) -> Table:
        """What the last round of the shard Leases saw and decided."""

    def locate(self, key: str) -> tuple[str, str] | None:
        """The replica working on strategy ``key`` and its address."""

    def locate_repository(self, repository: str) -> tuple[str, str] | None:
        """The replica holding ``repository``'s shard and its address."""

    def owner(self, key: str) -> str | None:
        """The replica working on strategy ``key``."""

    def owns(self, repository: str) -> bool:
        """Whether a write on ``repository`` may start on this replica now."""

    def annotate(self, keys: list[str]) -> None:
        """Hand ``keys`` to their owners the slow way: through their objects' annotation."""


def others(shards: Shards) -> list[str]:
    """The addresses of the other live replicas."""
    members = shards.table().members
    return [a for m, a in sorted(members.items()) if m != shards.identity and a]


def shard_table(shards: Shards) -> dict[str, Any]:
    """``GET /api/v1/shards``'s answer."""
    table = shards.table()
    weights = table.work.weights
    per_member = loads(table.assigned, weights)
    held: dict[str, float] = {}
    for shard, holder in table.holders.items():
        if holder:
            held[holder] = held.get(holder, 0.0) + weights.get(shard, 0.0)
    total = sum(weights.values())
    average = total / len(table.members) if table.members else 0.0
    return {
        "identity": shards.identity,
        "shardCount": shards.settings.count,
        "balance": round(max(per_member.values()) / average, 3) if average else None,
        "members": [
            {
                "identity": member,
                "address": address,
                "self": member == shards.identity,
                "assignedStrategies": int(per_member.get(member, 0)),
                "heldStrategies": int(held.get(member, 0)),
                "heldShards": sum(1 for h in table.holders.values() if h == member),
            }
            for member, address in sorted(table.members.items())
        ],
        "shards": [
            {
                "name": shard,
                "lease": shard_lease(shards.settings.group, shard),
                "holder": table.holders.get(shard) or None,
                "assigned": table.assigned.get(shard),
                "strategies": int(weights.get(shard, 0)),
                "repositories": sorted(table.work.repositories.get(shard, [])),
            }
            for shard in sorted(weights)
        ],
    }


class Listing:
    """``GET /api/v1/strategies`` on a sharded replica (``api()``: the runtime's API)."""

    def __init__(
        self,
        shards: Shards,
        runtime: Callable[[], ClusterRuntime],
        api: Callable[[], Api],
        client: httpx.AsyncClient,
        verifier: Verifier,
    ) -> None:
        self.shards = shards
        self.runtime = runtime
        self.api = api
        self.client = client
        self.verifier = verifier

    @property
    def token(self) -> str | None:
        return self.shards.settings.peer_token

    def _local(self) -> list[dict[str, Any]]:
        runtime = self.runtime()
        me = self.shards.identity
        return [
            strategy_summary(s, runtime.view(s.name), owner=me)
            for s in runtime.strategies()
            if runtime.mine(s.name)
        ]

    async def strategies(self, request: Request) -> Response:
        local = request.query_params.get("scope") == "local"
        signature = request.headers.get(SIGNATURE, "")
        readable: Callable[[str], bool]
        if local and self.verifier.verify(signature, b"", what=f"GET {LOCAL}") is not None:
            readable = lambda name: True  # noqa: E731  the entry replica filters
        else:
            api = self.api()
            who = await api.reader(request)
            if isinstance(who, Response):
                return who
            readable = lambda name: api.readable(who, name)  # noqa: E731
        mine = [s for s in await run_in_threadpool(self._local) if readable(s["name"])]
        if local:
            return JSONResponse({"strategies": mine})
        answers = await asyncio.gather(*(self._ask(a) for a in others(self.shards)))
        found = {s["name"]: s for s in mine}
        for answer in answers:
            found.update({s["name"]: s for s in answer})
        runtime = self.runtime()
        listed = [
            found.get(s.name) or strategy_summary(s, None, owner=self.shards.owner(s.name))
            for s in runtime.strategies()
            if readable(s.name)
        ]
        return JSONResponse({"strategies": listed})

    async def _ask(self, address: str) -> list[dict[str, Any]]:
        token = self.token
        headers = {SIGNATURE: sign(token, b"", what=f"GET {LOCAL}", to=address)} if token else {}
        try:
            answer = await self.client.get(address.rstrip("/") + LOCAL, headers=headers)
            strategies: list[dict[str, Any]] = answer.json()["strategies"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return []
        return strategies
