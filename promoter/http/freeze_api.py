"""The freeze routes: ``POST /api/v1/freeze``, ``POST /api/v1/unfreeze``, ``GET /api/v1/freezes``.

A freeze stops every promotion of its scope (everything, a strategy, or an environment of
one) until a person lifts it; reverts still go through. It is an administrator's write:
it needs the API's bearer token like every other write (docs/freezes.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from promoter.errors import GitError
from promoter.http.body import BodyTooLarge, read_body
from promoter.http.ports import Commands, Views

MAX_REASON = 200


class FreezeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: str | None = Field(default=None, min_length=1, max_length=255)
    environment: str | None = Field(default=None, min_length=1, max_length=255)
    reason: str = Field(default="", max_length=MAX_REASON)
    user: str = Field(default="promoter-cli", min_length=1, max_length=255)


class FreezeApi:
    """The freeze routes, behind ``authorized`` (the API's bearer token)."""

    def __init__(
        self,
        *,
        views: Views,
        commands: Commands,
        authorized: Callable[[Request], bool],
        problem: Callable[..., JSONResponse],
    ) -> None:
        self.views = views
        self.commands = commands
        self.authorized = authorized
        self.problem = problem

    def routes(self) -> list[Route]:
        return [
            Route("/api/v1/freezes", self.list_freezes),
            Route("/api/v1/freeze", self.freeze, methods=["POST"]),
            Route("/api/v1/unfreeze", self.unfreeze, methods=["POST"]),
        ]

    async def _body(self, request: Request) -> FreezeBody | Response:
        if not self.authorized(request):
            return self.problem(401, "a valid bearer token is required")
        try:
            return FreezeBody.model_validate(json.loads(await read_body(request) or b"{}"))
        except BodyTooLarge:
            return self.problem(413, "the body is too large")
        except ValueError:
            return self.problem(422, "body must be JSON: strategy, environment, reason, user")

    async def freeze(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        if not body.reason.strip():
            return self.problem(422, "a freeze needs a reason")
        return await self._run(
            lambda: self.commands.freezes.freeze(
                strategy=body.strategy,
                environment=body.environment,
                reason=body.reason.strip(),
                by=body.user,
            )
        )

    async def unfreeze(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        return await self._run(
            lambda: self.commands.freezes.unfreeze(
                strategy=body.strategy, environment=body.environment, by=body.user
            )
        )

    async def _run(self, call: Callable[[], Any]) -> Response:
        try:
            result = await run_in_threadpool(call)
        except LookupError as exc:
            return self.problem(404, str(exc).strip("'\""))
        except GitError as exc:
            return self.problem(502, f"the freeze could not be written: {exc}")
        self.commands.enqueue(list(result.strategies))
        return JSONResponse(asdict(result))

    async def list_freezes(self, request: Request) -> Response:
        """Every freeze covering an environment, as the last reconciles found them."""
        found: dict[tuple[Any, ...], dict[str, Any]] = {}
        for strategy in self.views.strategies():
            view = self.views.view(strategy.name)
            if view is None or view.snapshot is None:
                continue
            for env in view.snapshot.environments:
                for f in env.freezes:
                    key = (f.scope, f.reason, f.start, f.end)
                    entry = found.setdefault(
                        key,
                        {
                            "scope": f.scope,
                            "reason": f.reason,
                            "by": f.by or None,
                            "start": f.start.isoformat() if f.start else None,
                            "end": f.end.isoformat() if f.end else None,
                            "timeZone": f.time_zone,
                            "environments": [],
                        },
                    )
                    entry["environments"].append(f"{strategy.name}/{env.branch}")
        return JSONResponse({"freezes": list(found.values())})
