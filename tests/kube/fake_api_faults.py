"""Faults and a journal for the Kubernetes API stand-in when it runs as a process
(``fake_api_server``): what a benchmark needs to break it from outside and to read
afterwards what was written when.

- ``POST /debug/fault`` ``{"fault": "broken" | "hung" | ""}``: every request fails with
  500 (``broken``), or is held unanswered (``hung``: the watches too, as a frozen API
  server's connections) until the fault ends, when the held ones get 503; ending a
  fault ends every watch and forgets the history, so that clients relist, as after an
  API server's restart.
- ``GET /debug/journal?since=<epoch s>``: every Lease and Event written, in order, with
  the time the stand-in took it (``at``, epoch seconds): a Lease's name, role, holder,
  renewTime and duration; an Event's object, reason and reporting instance.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.kube.fake_api import FakeKube

ROLE = "promoter.argoproj.io/lease-role"
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


class Faults:
    """``fake`` behind a switch of faults, its Lease and Event writes journaled."""

    def __init__(self, fake: FakeKube) -> None:
        self.fake = fake
        self.hung = False
        self.journal: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        bump = fake._bump

        def journaled(resource: Any, kind: str, body: Any) -> None:
            bump(resource, kind, body)
            self._record(resource[1], body)

        fake._bump = journaled  # type: ignore[method-assign]
        self.app = Starlette(
            routes=[
                Route("/debug/fault", self.fault, methods=["POST"]),
                Route("/debug/journal", self.read_journal, methods=["GET"]),
                Route("/{path:path}", self.handle, methods=METHODS),
            ]
        )

    async def handle(self, request: Request) -> Response:
        if self.hung and request.url.path != "/debug/counts":
            while self.hung:
                await asyncio.sleep(0.05)
            return JSONResponse({"kind": "Status", "code": 503}, status_code=503)
        return await self.fake.handle(request)

    async def fault(self, request: Request) -> Response:
        fault = (await request.json()).get("fault") or ""
        fake = self.fake
        if fault == "hung":
            fake.hold()
            self.hung = True
        elif fault == "broken":
            fake.broken = True
            fake.expire()
        else:
            self.hung = fake.broken = False
            fake.expire()
        return JSONResponse({"fault": fault})

    async def read_journal(self, request: Request) -> Response:
        since = float(request.query_params.get("since") or 0)
        with self._lock:
            return JSONResponse([e for e in self.journal if e["at"] >= since])

    def _record(self, plural: str, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        if plural == "leases":
            spec = body.get("spec") or {}
            entry = {
                "kind": "lease",
                "name": meta.get("name"),
                "role": (meta.get("labels") or {}).get(ROLE),
                "holder": spec.get("holderIdentity") or "",
                "renewed": spec.get("renewTime"),
                "duration": spec.get("leaseDurationSeconds"),
            }
        elif plural == "events":
            entry = {
                "kind": "event",
                "name": (body.get("involvedObject") or {}).get("name"),
                "reason": body.get("reason"),
                "instance": body.get("reportingInstance") or (body.get("source") or {}).get("host"),
            }
        else:
            return
        with self._lock:
            self.journal.append({"at": time.time(), **entry})
