"""A small stateful Kubernetes API server for the tests and benchmarks, served over real HTTP.

It keeps objects per resource with a global resourceVersion, bumps ``generation``
on spec changes, honours the ``status`` subresource, optimistic concurrency on PUT,
JSON and merge patches, label selectors (``key=value``) on lists, lists in pages
(``limit`` and ``continue``, every page read from the first one's snapshot) and list +
watch (resourceVersion, bookmarks, timeouts). ``hold()`` keeps events from open watches;
``expire()`` compacts the history so that a watch resumed from before it gets ``410
Gone``, and a list continued from before it ``410 Expired``, as a real API server's
do. The history is kept per resource and searched by resourceVersion, so thousands of
objects and several replicas watching them stay cheap.
``fake_api_server`` serves it from a process of its own (the benchmarks).
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Obj = dict[str, Any]
Resource = tuple[str, str]  # (group, plural)
KINDS = {
    "promotionstrategies": "PromotionStrategy",
    "gitrepositories": "GitRepository",
    "scmproviders": "ScmProvider",
    "commitstatuses": "CommitStatus",
    "leases": "Lease",
    "events": "Event",
    "secrets": "Secret",
}
WITH_STATUS = {"promotionstrategies", "gitrepositories", "scmproviders", "commitstatuses"}
MAX_EVENTS = 50_000
"""Events kept per resource (a benchmark renews Leases for many minutes)."""
MAX_SNAPSHOTS = 64
"""Paged lists whose snapshot is kept for their next page (the oldest goes first)."""
EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You"
    " can start a new list without the continue parameter, or use the continue token in"
    " this response to retrieve the remainder of the results. Continuing with the provided"
    " token results in an inconsistent list - objects that were created, modified, or"
    " deleted between the time the first chunk was returned and now may show up in the list."
)
"""The API server's words for a continue token past compaction."""


def _status(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _selects(selector: str | None, obj: Obj) -> bool:
    """Whether ``obj``'s labels match a ``key=value,...`` selector (None: everything)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    wanted = (part.split("=", 1) for part in (selector or "").split(",") if "=" in part)
    return all(labels.get(k) == v for k, v in wanted)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902: add, replace, remove, test (enough for the promoter)."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if op["op"] == "replace" and last not in parent:
                raise KeyError(op["path"])
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[last]
        elif op["op"] == "test" and parent.get(last) != op["value"]:
            raise ValueError(op["path"])
    return doc


class FakeKube:
    """The state and the ASGI app (``.app``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rv = 0
        self.objects: dict[tuple[Resource, str, str], Obj] = {}
        self.history: dict[Resource, tuple[list[int], list[Obj]]] = {}
        """Per resource: the resourceVersions of its events, and the events."""
        self.trimmed: dict[Resource, int] = {}
        """Per resource: events up to this resourceVersion were compacted away."""
        self.compacted = 0
        self.held = False
        self.epoch = 0  # bumped to end every open watch
        self.writes: Counter[tuple[str, str, str]] = Counter()  # (plural, name, "status"|"main")
        self.watches = 0
        self.statuses: dict[tuple[str, str], list[Any]] = {}  # every status written, in order
        self.refused_holders: set[str] = set()  # Lease writes naming them fail (a partition)
        self.broken = False  # every request fails with 500 while set
        self.list_delays: dict[str, float] = {}  # plural -> seconds a list of it takes
        self.lists: Counter[str] = Counter()  # plural -> list requests (pages) served
        self.snapshots: dict[str, tuple[int, list[Obj]]] = {}
        """A paged list's id -> (its resourceVersion, the objects it lists)."""
        self.write_delays: dict[str, float] = {}
        """Seconds a write takes before it is made, by plural (a create, or a write to
        the object) or ``plural/status`` (a write to its status): a slow API server."""
        self.requests = 0
        self.app = Starlette(
            routes=[
                Route(
                    "/{path:path}", self.handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
                )
            ]
        )

    # --- test helpers -------------------------------------------------------------------

    def hold(self) -> None:
        """Open watches stop receiving events (as if the connection hung)."""
        self.held = True

    def expire(self) -> None:
        """Forget the history so far and end every watch: resuming from before gets 410."""
        with self.lock:
            self.compacted = self.rv
            self.held = False
            self.epoch += 1
            self.snapshots.clear()

    def get(
        self, plural: str, namespace: str, name: str, group: str = "promoter.argoproj.io"
    ) -> Obj | None:
        with self.lock:
            found = self.objects.get(((group, plural), namespace, name))
            return copy.deepcopy(found) if found else None

    def items(self, plural: str) -> list[Obj]:
        with self.lock:
            return [copy.deepcopy(o) for (res, _, _), o in self.objects.items() if res[1] == plural]

    # --- state changes ---------------------------------------------------------------------

    def _bump(self, resource: Resource, kind: str, obj: Obj) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        rvs, events = self.history.setdefault(resource, ([], []))
        rvs.append(self.rv)
        events.append({"type": kind, "object": copy.deepcopy(obj)})
        if len(rvs) > MAX_EVENTS:  # compact the oldest half, as etcd compacts its history
            half = len(rvs) // 2
            self.trimmed[resource] = rvs[half - 1]
            del rvs[:half], events[:half]

    def preload(self, objects: list[Obj]) -> None:
        """Create objects at once (``group/version`` from each one's ``apiVersion``)."""
        with self.lock:
            for obj in objects:
                api = obj.get("apiVersion", "v1")
                group = api.rsplit("/", 1)[0] if "/" in api else ""
                plural = next(p for p, kind in KINDS.items() if kind == obj["kind"])
                namespace = obj["metadata"].get("namespace", "")
                self._create((group, plural), namespace, copy.deepcopy(obj))

    def _create(self, resource: Resource, namespace: str, body: Obj) -> tuple[int, Obj]:
        meta = body.setdefault("metadata", {})
        name = meta.get("name") or (meta.get("generateName", "x-") + uuid.uuid4().hex[:5])
        key = (resource, namespace, name)
        if key in self.objects:
            return 409, _status(409, "AlreadyExists", f"{resource[1]} {name!r} already exists")
        meta.update(
            name=name,
            namespace=namespace,
            uid=str(uuid.uuid4()),
            generation=1,
            creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        if resource[1] in WITH_STATUS:
            body.pop("status", None)
        self.objects[key] = body
        self._bump(resource, "ADDED", body)
        self.writes[(resource[1], name, "main")] += 1
        return 201, body

    def _write(self, resource: Resource, key: tuple[Resource, str, str], new: Obj, sub: str) -> Obj:
        old = self.objects[key]
        if resource[1] in WITH_STATUS:
            if sub == "status":
                new = {**old, "status": new.get("status")}
            else:
                new = {**new, "status": old.get("status")}
                if new["status"] is None:
                    new.pop("status")
        meta = {**old["metadata"], **{k: v for k, v in new.get("metadata", {}).items()}}
        for fixed in ("uid", "creationTimestamp", "namespace", "name", "generation"):
            meta[fixed] = old["metadata"].get(fixed)
        new["metadata"] = meta
        spec_changed = {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
            k: v for k, v in old.items() if k not in ("metadata", "status")
        }
        if spec_changed:
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        self.objects[key] = new
        self._bump(resource, "MODIFIED", new)
        self.writes[(resource[1], key[2], sub or "main")] += 1
        if sub == "status":
            self.statuses.setdefault((resource[1], key[2]), []).append(copy.deepcopy(new["status"]))
        return new

    # --- HTTP -------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        self.requests += 1
        if request.url.path == "/debug/counts":  # the benchmarks' view of the load
            return self._counts()
        if self.broken:
            return JSONResponse(_status(500, "InternalError", "broken"), status_code=500)
        parts = request.url.path.strip("/").split("/")
        if parts[0] == "api":
            group, rest = "", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 3:
            group, rest = parts[1], parts[3:]
        else:
            return JSONResponse(_status(404, "NotFound", "unknown path"), status_code=404)
        namespace = ""
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        resource = (group, plural)
        if plural not in KINDS:
            return JSONResponse(_status(404, "NotFound", f"no resource {plural}"), status_code=404)
        if not name:
            if request.method == "POST":
                body = json.loads(await request.body())
                await asyncio.sleep(self.write_delays.get(plural, 0.0))
                with self.lock:
                    code, out = self._create(resource, namespace, body)
                return JSONResponse(out, status_code=code)
            if request.query_params.get("watch") in ("true", "1", "True"):
                return self._watch(request, resource, namespace)
            await asyncio.sleep(self.list_delays.get(plural, 0.0))
            return self._list(resource, namespace, request.query_params)
        return await self._one(request, resource, namespace, name, sub)

    def _counts(self) -> Response:
        with self.lock:
            writes: Counter[str] = Counter()
            for (plural, _, sub), n in self.writes.items():
                writes[f"{plural}/status" if sub == "status" else plural] += n
            return JSONResponse(
                {"requests": self.requests, "watches": self.watches, "writes": dict(writes)}
            )

    def _list(self, resource: Resource, namespace: str, query: Any) -> Response:
        """All the objects, or ``limit`` of them from where ``continue`` says, of the
        snapshot the first page was read from (410 once it is compacted)."""
        selector, token = query.get("labelSelector"), query.get("continue")
        try:
            page = int(query.get("limit") or 0)
            listed_id, _, start = (token or "").rpartition(":")
            offset = int(start) if token else 0
        except ValueError:
            return JSONResponse(
                _status(400, "BadRequest", "continue key is not valid"), status_code=400
            )
        with self.lock:
            self.lists[resource[1]] += 1
            if token:
                snapshot = self.snapshots.get(listed_id)
                if snapshot is None or snapshot[0] < self.compacted:
                    return JSONResponse(_status(410, "Expired", EXPIRED_CONTINUE), status_code=410)
                rv, objects = snapshot
            else:
                rv = self.rv
                objects = [
                    o
                    for (res, ns, _), o in sorted(self.objects.items())
                    if res == resource
                    and (not namespace or ns == namespace)
                    and _selects(selector, o)
                ]
                listed_id = uuid.uuid4().hex
            end = offset + page if page > 0 else len(objects)
            items = [copy.deepcopy(o) for o in objects[offset:end]]
            meta: Obj = {"resourceVersion": str(rv)}
            if end < len(objects):
                if listed_id not in self.snapshots:
                    self.snapshots[listed_id] = (rv, objects)
                    while len(self.snapshots) > MAX_SNAPSHOTS:
                        del self.snapshots[next(iter(self.snapshots))]
                meta["continue"] = f"{listed_id}:{end}"
                meta["remainingItemCount"] = len(objects) - end
            else:
                self.snapshots.pop(listed_id, None)
        kind = KINDS[resource[1]]
        return JSONResponse(
            {"kind": f"{kind}List", "apiVersion": "v1", "metadata": meta, "items": items}
        )

    async def _one(
        self, request: Request, resource: Resource, namespace: str, name: str, sub: str
    ) -> Response:
        key = (resource, namespace, name)
        raw = await request.body()
        if request.method != "GET":
            written = f"{resource[1]}/{sub}" if sub else resource[1]
            await asyncio.sleep(self.write_delays.get(written, 0.0))
        with self.lock:
            old = self.objects.get(key)
            if old is None:
                return JSONResponse(
                    _status(404, "NotFound", f"{resource[1]} {name!r} not found"), status_code=404
                )
            if request.method == "GET":
                return JSONResponse(copy.deepcopy(old))
            if request.method == "DELETE":
                del self.objects[key]
                self._bump(resource, "DELETED", copy.deepcopy(old))
                return JSONResponse(old)
            body = json.loads(raw)
            holder = (
                (body.get("spec") or {}).get("holderIdentity") if isinstance(body, dict) else None
            )
            if resource[1] == "leases" and holder in self.refused_holders:
                return JSONResponse(
                    _status(503, "ServiceUnavailable", "partitioned"), status_code=503
                )
            if request.method == "PUT":
                sent = body.get("metadata", {}).get("resourceVersion")
                if sent and sent != old["metadata"]["resourceVersion"]:
                    return JSONResponse(
                        _status(409, "Conflict", "the object has been modified"), status_code=409
                    )
                new = body
            elif isinstance(body, list):  # a JSON patch; the client may label it otherwise
                try:
                    new = json_patch(old, body)
                except (KeyError, ValueError, IndexError) as exc:
                    return JSONResponse(_status(422, "Invalid", f"patch: {exc}"), status_code=422)
            else:
                new = merge_patch(old, body)
            return JSONResponse(copy.deepcopy(self._write(resource, key, new, sub)))

    def _watch(self, request: Request, resource: Resource, namespace: str) -> Response:
        since = request.query_params.get("resourceVersion") or ""
        timeout = float(request.query_params.get("timeoutSeconds") or 300)
        bookmarks = request.query_params.get("allowWatchBookmarks") in ("true", "True", "1")
        selector = request.query_params.get("labelSelector")

        async def events() -> AsyncIterator[bytes]:
            with self.lock:
                self.watches += 1
                epoch = self.epoch
                if since in ("", "0"):
                    cursor = self.rv
                    initial = [
                        {"type": "ADDED", "object": copy.deepcopy(o)}
                        for (res, ns, _), o in sorted(self.objects.items())
                        if res == resource
                        and (not namespace or ns == namespace)
                        and _selects(selector, o)
                    ]
                elif int(since) < max(self.compacted, self.trimmed.get(resource, 0)):
                    gone = _status(
                        410, "Expired", f"too old resource version: {since} ({self.compacted})"
                    )
                    initial, cursor = [{"type": "ERROR", "object": gone}], -1
                else:
                    initial, cursor = [], int(since)
            for event in initial:
                yield (json.dumps(event) + "\n").encode()
            if cursor < 0:
                return
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            while time.monotonic() < deadline and self.epoch == epoch:
                pending: list[Obj] = []
                with self.lock:
                    if not self.held:
                        rvs, events = self.history.get(resource, ([], []))
                        for event in events[bisect.bisect_right(rvs, cursor) :]:
                            ns = event["object"]["metadata"].get("namespace", "")
                            if (not namespace or ns == namespace) and _selects(
                                selector, event["object"]
                            ):
                                pending.append(event)
                        cursor = self.rv
                for event in pending:
                    yield (json.dumps(event) + "\n").encode()
                if bookmarks and not self.held and time.monotonic() - last_bookmark > 0.5:
                    last_bookmark = time.monotonic()
                    mark = {
                        "kind": KINDS[resource[1]],
                        "metadata": {"resourceVersion": str(cursor)},
                    }
                    yield (json.dumps({"type": "BOOKMARK", "object": mark}) + "\n").encode()
                await asyncio.sleep(0.02)

        return StreamingResponse(events(), media_type="application/json")
