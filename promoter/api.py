"""The HTTP API under /api/v1 plus /healthz, /readyz and /metrics.

Handlers only read memory or enqueue keys; the one write that reaches an SCM
(setting a commit status) runs in the thread pool, never on the event loop.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from html import escape
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from promoter.errors import GitError, ScmError
from promoter.metrics import REGISTRY
from promoter.models import SHA_RE, CommitStatus, Phase
from promoter.operations import OperationError
from promoter.status_page import render
from promoter.views import strategy_json, strategy_summary

if TYPE_CHECKING:
    from promoter.runtime import Runtime


def problem(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


class StatusBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, max_length=255)
    phase: Phase
    description: str = Field(default="", max_length=1024)
    url: str = Field(default="", max_length=2048)


OPERATIONS = ("revert", "hold", "release", "promote")


class OperationBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    environment: str = Field(min_length=1)
    reason: str = ""
    to: str | None = None
    dry_sha: str | None = Field(default=None, alias="drySha")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Api:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        token = runtime.config.daemon.api_token
        self._token = token.resolve() if token else None

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.healthz),
            Route("/readyz", self.readyz),
            Route("/metrics", self.metrics),
            Route("/api/v1/strategies", self.list_strategies),
            Route("/api/v1/strategies/{name}", self.get_strategy),
            Route("/strategies/{name}", self.status_page),
            Route(
                "/api/v1/repositories/{repo}/commits/{sha}/statuses",
                self.set_status,
                methods=["POST"],
            ),
            Route("/api/v1/refresh", self.refresh, methods=["POST"]),
            Route("/api/v1/strategies/{name}/{operation:str}", self.operate, methods=["POST"]),
        ]

    def authorized(self, request: Request) -> bool:
        """Writes need the bearer token; without one configured, only a loopback daemon."""
        if self._token is None:
            return is_loopback(self.rt.config.daemon.host)
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode(), self._token.encode()
        )

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        unreachable = dict(self.rt.unreachable())
        ready = self.rt.started and len(unreachable) < max(1, len(self.rt.config.repositories))
        return JSONResponse(
            {"ready": ready, "unreachable": unreachable}, status_code=200 if ready else 503
        )

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    async def list_strategies(self, request: Request) -> Response:
        views = self.rt.reconciler.views
        return JSONResponse(
            {
                "strategies": [
                    strategy_summary(s, views.get(s.name))
                    for s in self.rt.config.promotion_strategies
                ]
            }
        )

    async def get_strategy(self, request: Request) -> Response:
        name = request.path_params["name"]
        strategy = self.rt.config.strategy(name)
        if strategy is None:
            return problem(404, f"no strategy named {name!r}")
        return JSONResponse(strategy_json(strategy, self.rt.reconciler.views.get(name)))

    async def status_page(self, request: Request) -> Response:
        """The page the promoter's checks on a PR link to."""
        name = request.path_params["name"]
        strategy = self.rt.config.strategy(name)
        if strategy is None:
            return HTMLResponse(f"<p>no strategy named {escape(name)!r}</p>", status_code=404)
        detail = strategy_json(strategy, self.rt.reconciler.views.get(name))
        return HTMLResponse(render(detail))

    async def set_status(self, request: Request) -> Response:
        if not self.authorized(request):
            return problem(401, "a valid bearer token is required")
        name, sha = request.path_params["repo"], request.path_params["sha"].lower()
        repo = next((r for r in self.rt.config.repositories if r.name == name), None)
        if repo is None:
            return problem(404, f"no repository named {name!r}")
        if not SHA_RE.match(sha):
            return problem(422, "sha must be a full 40-character hexadecimal commit SHA")
        try:
            body = StatusBody.model_validate(json.loads(await request.body() or b"null"))
        except (ValueError, ValidationError) as exc:
            errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else None
            return problem(
                422, "invalid status", details=json.loads(json.dumps(errors, default=str))
            )
        status = CommitStatus(
            key=body.key,
            phase=body.phase,
            description=body.description,
            url=body.url,
            source="api",
        )
        plugin = self.rt.plugins[repo.scm_provider]
        try:
            await run_in_threadpool(plugin.set_commit_status, repo=repo, sha=sha, status=status)
        except ScmError as exc:
            return problem(502, f"the SCM refused the status: {exc}")
        self.rt.status_cache.put(repo.name, sha, status)
        keys = set(self.rt.sha_index.strategies_for(sha))
        if keys:  # a commit they track: no ref moved
            self.rt.wake(keys)
        else:
            keys = set(self.rt.strategies_of(repo.name))
            self.rt.enqueue(keys)
        return JSONResponse(
            {
                "repository": repo.name,
                "sha": sha,
                "status": status.model_dump(mode="json"),
                "enqueued": sorted(keys),
            },
            status_code=201,
        )

    async def operate(self, request: Request) -> Response:
        """revert | hold | release | promote on one environment (``{"environment": ...}``)."""
        if not self.authorized(request):
            return problem(401, "a valid bearer token is required")
        name, operation = request.path_params["name"], request.path_params["operation"]
        if operation not in OPERATIONS:
            return problem(404, f"no operation {operation!r}; use {', '.join(OPERATIONS)}")
        try:
            body = OperationBody.model_validate(json.loads(await request.body() or b"{}"))
        except (ValueError, ValidationError):
            return problem(422, "body must be JSON with at least an environment")
        ops = self.rt.operations
        calls = {
            "revert": lambda: ops.revert(name, body.environment, to=body.to),
            "hold": lambda: ops.hold(
                name, body.environment, dry_sha=body.dry_sha, reason=body.reason
            ),
            "release": lambda: ops.release(name, body.environment, dry_sha=body.dry_sha),
            "promote": lambda: ops.promote(name, body.environment, reason=body.reason),
        }
        try:
            result = await run_in_threadpool(calls[operation])
        except OperationError as exc:
            return problem(exc.status, str(exc))
        except (ScmError, GitError) as exc:
            return problem(502, f"{operation} failed: {exc}")
        self.rt.enqueue([name])
        return JSONResponse(result)

    async def refresh(self, request: Request) -> Response:
        if not self.authorized(request):
            return problem(401, "a valid bearer token is required")
        raw = await request.body()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return problem(400, "body must be JSON or empty")
        wanted = data.get("strategy") if isinstance(data, dict) else None
        if wanted is not None and self.rt.config.strategy(str(wanted)) is None:
            return problem(404, f"no strategy named {wanted!r}")
        keys = [str(wanted)] if wanted else [s.name for s in self.rt.config.promotion_strategies]
        self.rt.enqueue(keys)
        return JSONResponse({"enqueued": keys}, status_code=202)
