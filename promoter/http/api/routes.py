"""The HTTP API under /api/v1 plus /healthz, /readyz and /metrics.

Reads need the viewer role on what they show (``access``: anonymous reads only when
configured); the writes are in ``writes``, ``statuses`` and ``freeze_api``, one route
each for the rows of the table of operations (``promoter.config.operations``). Handlers
only read memory or enqueue keys; what reads git runs in the thread pool, never on the
event loop. ``/healthz``, ``/readyz`` and ``/metrics`` answer anyone: probes and
scrapers carry no credentials.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from promoter.config import OPERATIONS as WRITES
from promoter.config import STRATEGY_OPERATION, Operation
from promoter.http.access import AccessControl, Identity, Scope, Unauthenticated
from promoter.http.api.attempt import Attempts
from promoter.http.api.dora_view import DoraCollector, dora_json, strategy_dora
from promoter.http.api.freeze_api import FreezeApi
from promoter.http.api.problems import invalid, problem
from promoter.http.api.statuses import StatusRoutes
from promoter.http.api.views import strategy_json, strategy_summary
from promoter.http.api.writes import MAX_REASON, OPERATIONS, WriteRoutes
from promoter.http.ports import Commands, Views
from promoter.metrics import REGISTRY
from promoter.state.audit_entry import AuditEntry, AuditQuery

__all__ = ["MAX_REASON", "OPERATIONS", "Api"]

MAX_AUDIT_PAGE = 500


class Api:
    """The routes, given what they read (``views``), what they may do (``commands``) and
    who may do it (``access``)."""

    def __init__(self, *, views: Views, commands: Commands, access: AccessControl) -> None:
        self.views = views
        self.commands = commands
        self.access = access
        attempts = Attempts(commands.audit, access)
        self.writes = WriteRoutes(views, commands, attempts)
        self.statuses = StatusRoutes(views, commands, attempts)
        self.freezes = FreezeApi(
            views=views, commands=commands, attempts=attempts, reader=self.reader
        )

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.healthz),
            Route("/readyz", self.readyz),
            Route("/metrics", self.metrics),
            Route("/api/v1/whoami", self.whoami),
            Route("/api/v1/audit", self.audit),
            Route("/api/v1/strategies", self.list_strategies),
            Route("/api/v1/strategies/{name}", self.get_strategy),
            Route("/api/v1/strategies/{name}/dora", self.get_dora),
            *self.freezes.routes(),
            *(Route(op.path, self._write(op), methods=["POST"]) for op in WRITES),
            Route(
                STRATEGY_OPERATION.replace("{operation}", "{operation:str}"),
                self.writes.any_operation,
                methods=["POST"],
            ),
        ]

    def _write(self, op: Operation) -> Callable[[Request], Awaitable[Response]]:
        """The handler of a row of the table of operations."""
        handlers = {
            "set-status": self.statuses.set_status,
            "refresh": self.statuses.refresh,
            "freeze": self.freezes.freeze,
            "unfreeze": self.freezes.unfreeze,
        }
        return handlers.get(op.name) or self.writes.endpoint(op.name)

    async def reader(self, request: Request, strategy: str | None = None) -> Identity | Response:
        """The caller when it may read ``strategy`` (None: some strategy), else 401/403."""
        who = await self.access.identify(request)
        if isinstance(who, Unauthenticated):
            return problem(401, who.reason)
        scope = Scope(strategy) if strategy is not None else None
        if self.access.policy.allows(who, "viewer", scope):
            return who
        if not who.credentialed:
            return problem(401, "reading needs credentials: send Authorization: Bearer TOKEN")
        return problem(403, f"{who.name} needs the viewer role on {strategy or 'a strategy'}")

    def readable(self, who: Identity, strategy: str) -> bool:
        return self.access.policy.allows(who, "viewer", Scope(strategy))

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        ready, unreachable = self.views.readiness()
        return JSONResponse(
            {"ready": ready, "unreachable": unreachable, "parked": self.views.parked()},
            status_code=200 if ready else 503,
        )

    async def metrics(self, request: Request) -> Response:
        dora = CollectorRegistry()
        dora.register(DoraCollector(self.views))
        text = generate_latest(REGISTRY) + await run_in_threadpool(generate_latest, dora)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    async def whoami(self, request: Request) -> Response:
        """Who the daemon takes the caller for, and the roles it was given."""
        who = await self.access.identify(request)
        if isinstance(who, Unauthenticated):
            return problem(401, who.reason)
        return JSONResponse(
            {
                "name": who.name,
                "via": who.via,
                "groups": list(who.groups),
                "roles": self.access.policy.roles(who),
            }
        )

    async def get_dora(self, request: Request) -> Response:
        """DORA figures per environment over the last 30 days."""
        name = request.path_params["name"]
        who = await self.reader(request, name)
        if isinstance(who, Response):
            return who
        if self.views.strategy(name) is None:
            return problem(404, f"no strategy named {name!r}")
        figures = await run_in_threadpool(strategy_dora, self.views, name)
        return JSONResponse(dora_json(name, figures))

    async def list_strategies(self, request: Request) -> Response:
        who = await self.reader(request)
        if isinstance(who, Response):
            return who
        return JSONResponse(
            {
                "strategies": [
                    strategy_summary(s, self.views.view(s.name), owner=self.views.owner(s.name))
                    for s in self.views.strategies()
                    if self.readable(who, s.name)
                ]
            }
        )

    async def get_strategy(self, request: Request) -> Response:
        name = request.path_params["name"]
        who = await self.reader(request, name)
        if isinstance(who, Response):
            return who
        strategy = self.views.strategy(name)
        if strategy is None:
            return problem(404, f"no strategy named {name!r}")
        return JSONResponse(
            strategy_json(strategy, self.views.view(name), owner=self.views.owner(name))
        )

    async def audit(self, request: Request) -> Response:
        """The audit of writes, newest first: filters and a page (``next`` for the next)."""
        params = request.query_params
        who = await self.reader(request, params.get("strategy"))
        if isinstance(who, Response):
            return who
        try:
            query = AuditQuery(
                strategy=params.get("strategy"),
                environment=params.get("environment"),
                who=params.get("who"),
                action=params.get("action"),
                outcome=params.get("outcome"),
                since=_time(params.get("since")),
                until=_time(params.get("until")),
                before=params.get("before"),
                limit=min(MAX_AUDIT_PAGE, max(1, int(params.get("limit", "50")))),
            )
        except (ValueError, ValidationError) as exc:
            return invalid("since and until are ISO 8601 times, limit a number", exc)
        names = [query.strategy] if query.strategy else [s.name for s in self.views.strategies()]
        repositories = [
            s.repository
            for s in (self.views.strategy(n) for n in names)
            if s is not None and self.readable(who, s.name)
        ]
        page = await run_in_threadpool(self.commands.audit.entries, query, repositories)
        shown = [e for e in page.entries if self._may_see(who, e)]
        return JSONResponse(
            {"entries": [e.model_dump(mode="json") for e in shown], "next": page.next}
        )

    def _may_see(self, who: Identity, entry: AuditEntry) -> bool:
        """An entry of a strategy the caller reads; one of no strategy, for admins."""
        if entry.strategy is None:
            return self.access.policy.allows(who, "admin", Scope("*"))
        return self.readable(who, entry.strategy)


def _time(text: str | None) -> datetime | None:
    """An ISO 8601 time; one without a zone is UTC."""
    if not text:
        return None
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return found if found.tzinfo else found.replace(tzinfo=UTC)
