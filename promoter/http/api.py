"""The HTTP API under /api/v1 plus /healthz, /readyz and /metrics.

Handlers only read memory or enqueue keys; the one write that reaches an SCM
(setting a commit status) runs in the thread pool, never on the event loop.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import re
from collections.abc import Callable
from dataclasses import fields
from functools import partial
from html import escape
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from promoter.daemon.operation_results import OperationResult
from promoter.daemon.operations import OperationError
from promoter.errors import (
    CommitNotFound,
    ConfigError,
    GitError,
    ScmError,
    ScmRateLimited,
    ScmUnavailable,
    StatusNotRead,
)
from promoter.http.body import MAX_BODY, BodyTooLarge, read_body
from promoter.http.dora_view import DoraCollector, dora_json, strategy_dora
from promoter.http.ports import Commands, Views
from promoter.http.status_page import render
from promoter.http.views import strategy_json, strategy_summary
from promoter.metrics import REGISTRY
from promoter.models import CommitStatus, Phase
from promoter.redaction import scrub


def scm_problem(what: str, exc: ScmError) -> JSONResponse:
    """An SCM error as the API answers it: 429 or 503 with ``Retry-After`` when the SCM
    asked to wait or is down for now, else 502."""
    status = 502
    headers: dict[str, str] = {}
    if isinstance(exc, ScmRateLimited):
        status = 429
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    elif isinstance(exc, ScmUnavailable):
        status = 503
        headers["Retry-After"] = str(max(1, math.ceil(exc.delay or 1)))
    response = problem(status, f"{what}: {exc}")
    response.headers.update(headers)
    return response


def problem(status: int, message: str, **extra: Any) -> JSONResponse:
    """An error answer; its message never carries a secret the process knows."""
    return JSONResponse({"error": scrub(message), **extra}, status_code=status)


SHORT_SHA_RE = re.compile(r"^[0-9a-f]{4,40}$")
"""A commit SHA, or a prefix of one that the daemon resolves in the repository."""


class StatusBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, max_length=255)
    phase: Phase
    description: str = Field(default="", max_length=1024)
    url: str = Field(default="", max_length=2048)
    force: bool = False
    """Write it even though no environment reads it (a CI job reporting on every commit)."""


OPERATIONS = (
    "revert",
    "hold",
    "release",
    "promote",
    "merge",
    "approve",
    "pin",
    "unpin",
    "approve-change",
)
MAX_NAME = 255
MAX_REASON = 1024
"""A reason goes into the ledger note, in git history for ever: a paragraph at most."""


class OperationBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    environment: str = Field(min_length=1, max_length=MAX_NAME)
    reason: str = Field(default="", max_length=MAX_REASON)
    to: str | None = Field(default=None, max_length=64)
    dry_sha: str | None = Field(default=None, alias="drySha", max_length=64)
    user: str = Field(default="promoter-cli", max_length=MAX_NAME)


def operation_json(result: OperationResult) -> dict[str, Any]:
    """An operation's answer: its fields in order, camelCase (``dry_sha`` is ``drySha``,
    ``from_`` is ``from``)."""
    return {_camel(f.name): getattr(result, f.name) for f in fields(result)}


def _camel(name: str) -> str:
    first, *rest = name.rstrip("_").split("_")
    return first + "".join(part.capitalize() for part in rest)


class RefreshBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)


def invalid(what: str, exc: ValueError) -> JSONResponse:
    """422 naming what is wrong (pydantic's details, without echoing the input)."""
    details = None
    if isinstance(exc, ValidationError):
        details = [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
    return problem(422, what, details=details)


def too_large() -> JSONResponse:
    response = problem(413, f"the body is larger than {MAX_BODY} bytes")
    response.headers["connection"] = "close"
    return response


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Api:
    """The routes, given what they read (``views``) and what they may do (``commands``).

    ``token`` is the bearer token writes need; without one, writes are allowed only
    when the daemon listens on loopback (``loopback_only``).
    """

    def __init__(
        self, *, views: Views, commands: Commands, token: str | None, loopback_only: bool
    ) -> None:
        if token is not None and not token.strip():
            raise ConfigError(["the API token must not be empty or only whitespace"])
        self.views = views
        self.commands = commands
        self._token = token
        self._loopback_only = loopback_only

    def routes(self) -> list[Route]:
        return [
            Route("/healthz", self.healthz),
            Route("/readyz", self.readyz),
            Route("/metrics", self.metrics),
            Route("/api/v1/strategies", self.list_strategies),
            Route("/api/v1/strategies/{name}", self.get_strategy),
            Route("/api/v1/strategies/{name}/dora", self.get_dora),
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
            return self._loopback_only
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        value = value.strip()
        return (
            scheme.lower() == "bearer"
            and bool(value)
            and hmac.compare_digest(value.encode(), self._token.encode())
        )

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

    async def get_dora(self, request: Request) -> Response:
        """DORA figures per environment over the last 30 days."""
        name = request.path_params["name"]
        if self.views.strategy(name) is None:
            return problem(404, f"no strategy named {name!r}")
        figures = await run_in_threadpool(strategy_dora, self.views, name)
        return JSONResponse(dora_json(name, figures))

    async def list_strategies(self, request: Request) -> Response:
        return JSONResponse(
            {
                "strategies": [
                    strategy_summary(s, self.views.view(s.name)) for s in self.views.strategies()
                ]
            }
        )

    async def get_strategy(self, request: Request) -> Response:
        name = request.path_params["name"]
        strategy = self.views.strategy(name)
        if strategy is None:
            return problem(404, f"no strategy named {name!r}")
        return JSONResponse(strategy_json(strategy, self.views.view(name)))

    async def status_page(self, request: Request) -> Response:
        """The page the promoter's checks on a PR link to."""
        name = request.path_params["name"]
        strategy = self.views.strategy(name)
        if strategy is None:
            return HTMLResponse(f"<p>no strategy named {escape(name)!r}</p>", status_code=404)
        detail = strategy_json(strategy, self.views.view(name))
        return HTMLResponse(render(detail))

    async def set_status(self, request: Request) -> Response:
        if not self.authorized(request):
            return problem(401, "a valid bearer token is required")
        name, sha = request.path_params["repo"], request.path_params["sha"].lower()
        if not self.views.has_repository(name):
            return problem(404, f"no repository named {name!r}")
        if not SHORT_SHA_RE.match(sha):
            return problem(422, "sha must be a hexadecimal commit SHA (4 to 40 characters)")
        try:
            body = StatusBody.model_validate(json.loads(await read_body(request) or b"null"))
        except BodyTooLarge:
            return too_large()
        except ValueError as exc:  # pydantic's ValidationError is one too
            return invalid("invalid status", exc)
        status = CommitStatus(
            key=body.key,
            phase=body.phase,
            description=body.description,
            url=body.url,
            source="api",
        )
        try:
            sha = await run_in_threadpool(self.commands.resolve_commit, name, sha)
            keys = await run_in_threadpool(
                partial(self.commands.post_status, force=body.force), name, sha, status
            )
        except CommitNotFound as exc:
            return problem(422, str(exc))
        except StatusNotRead as exc:
            return problem(409, str(exc))
        except LookupError:
            return problem(404, f"no repository named {name!r}")
        except ScmError as exc:
            return scm_problem("the SCM refused the status", exc)
        return JSONResponse(
            {
                "repository": name,
                "sha": sha,
                "status": status.model_dump(mode="json"),
                "enqueued": keys,
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
            body = OperationBody.model_validate(json.loads(await read_body(request) or b"{}"))
        except BodyTooLarge:
            return too_large()
        except ValueError as exc:
            return invalid("body must be JSON with at least an environment", exc)
        ops = self.commands.operations
        calls: dict[str, Callable[[], OperationResult]] = {
            "revert": lambda: ops.revert(name, body.environment, to=body.to),
            "hold": lambda: ops.hold(
                name, body.environment, dry_sha=body.dry_sha, reason=body.reason
            ),
            "release": lambda: ops.release(name, body.environment, dry_sha=body.dry_sha),
            "promote": lambda: ops.promote(name, body.environment, reason=body.reason),
            "merge": lambda: ops.merge(name, body.environment),
            "approve": lambda: ops.approve(name, body.environment, user=body.user),
            "pin": lambda: ops.pin(
                name, body.environment, dry_sha=body.dry_sha or "", reason=body.reason
            ),
            "unpin": lambda: ops.unpin(name, body.environment),
            "approve-change": lambda: ops.approve_change(name, dry_sha=body.dry_sha or ""),
        }
        try:
            result = await run_in_threadpool(calls[operation])
        except OperationError as exc:
            return problem(exc.status, str(exc))
        except ScmError as exc:
            return scm_problem(f"{operation} failed", exc)
        except GitError as exc:
            return problem(502, f"{operation} failed: {exc}")
        self.commands.enqueue([name])
        return JSONResponse(operation_json(result))

    async def refresh(self, request: Request) -> Response:
        if not self.authorized(request):
            return problem(401, "a valid bearer token is required")
        try:
            raw = await read_body(request)
        except BodyTooLarge:
            return too_large()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return problem(400, "body must be JSON or empty")
        try:
            wanted = RefreshBody.model_validate(data if isinstance(data, dict) else {}).strategy
        except ValidationError as exc:
            return invalid("strategy must be a strategy's name", exc)
        if wanted is not None and self.views.strategy(wanted) is None:
            return problem(404, f"no strategy named {wanted!r}")
        keys = [str(wanted)] if wanted else [s.name for s in self.views.strategies()]
        self.commands.enqueue(keys)
        return JSONResponse({"enqueued": keys}, status_code=202)
