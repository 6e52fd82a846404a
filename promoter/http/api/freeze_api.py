"""The freeze routes: ``POST /api/v1/freeze``, ``POST /api/v1/unfreeze``, ``GET /api/v1/freezes``.

A freeze stops every promotion of its scope (everything, a strategy, or an environment of
one) until a person lifts it; reverts still go through. Setting and lifting one is an
administrator's write (``admin`` on every environment it covers), done as the caller and
audited like every other write (docs/freezes.md, docs/security.md).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from promoter.config import environment_branch, operation
from promoter.errors import AmbiguousName, GitError, HoldLapsed, NotOwner
from promoter.http.access import Identity, Scope
from promoter.http.api.attempt import Attempt, Attempts
from promoter.http.api.body import BodyTooLarge, read_body
from promoter.http.api.problems import ambiguous, invalid, moved, problem, too_large
from promoter.http.ports import Commands, Views

MAX_REASON = 200
EVERYTHING = Scope("*")


class FreezeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: str | None = Field(default=None, min_length=1, max_length=255)
    environment: str | None = Field(default=None, min_length=1, max_length=255)
    reason: str = Field(default="", max_length=MAX_REASON)


class FreezeApi:
    """The freeze routes; writes begin with ``attempts`` (browser checks, the caller, the
    audit), reads with ``reader`` (the viewer role)."""

    def __init__(
        self,
        *,
        views: Views,
        commands: Commands,
        attempts: Attempts,
        reader: Callable[[Request], Awaitable[Identity | Response]],
    ) -> None:
        self.views = views
        self.commands = commands
        self.attempts = attempts
        self.reader = reader

    def routes(self) -> list[Route]:
        """The read; the writes' routes are the table's (``Api.routes``)."""
        return [Route("/api/v1/freezes", self.list_freezes)]

    def _scope(self, body: FreezeBody) -> Scope:
        """The environments the freeze covers: everything, a strategy's, or one
        (``AmbiguousName`` for a last part several of its branches share)."""
        if body.strategy is None:
            return EVERYTHING
        found = self.views.strategy(body.strategy)
        branches = [e.branch for e in found.environments] if found is not None else []
        if body.environment is None:
            return Scope(body.strategy, tuple(branches))
        env = body.environment
        branch = environment_branch(branches, env, strategy=body.strategy) or env
        return Scope(body.strategy, (branch,))

    async def _begin(self, request: Request, action: str) -> tuple[Attempt, FreezeBody | None]:
        attempt = await self.attempts.begin(request, action)
        if attempt.answer is not None:
            return attempt, None
        try:
            body = FreezeBody.model_validate(json.loads(await read_body(request) or b"{}"))
        except BodyTooLarge:
            attempt.answer = attempt.finish(too_large())
            return attempt, None
        except ValueError as exc:
            attempt.answer = attempt.finish(
                invalid("body must be JSON: strategy, environment, reason", exc)
            )
            return attempt, None
        found = self.views.strategy(body.strategy) if body.strategy else None
        attempt.strategy = body.strategy
        attempt.repository = found.repository if found is not None else None
        attempt.environment = body.environment
        attempt.detail = {"reason": body.reason}
        op = operation(action)
        assert op is not None
        try:
            scope = self._scope(body)
        except AmbiguousName as exc:
            attempt.answer = attempt.ambiguous(op.role, str(body.strategy), exc)
            return attempt, None
        denied = attempt.authorize(op.role, scope)
        if denied is not None:
            attempt.answer = denied
            return attempt, None
        return attempt, body

    async def freeze(self, request: Request) -> Response:
        attempt, body = await self._begin(request, "freeze")
        if body is None:
            assert attempt.answer is not None
            return attempt.answer
        if not body.reason.strip():
            return attempt.finish(problem(422, "a freeze needs a reason"))
        assert attempt.identity is not None
        by = attempt.identity.name
        return await self._run(
            attempt,
            lambda: self.commands.freezes.freeze(
                strategy=body.strategy,
                environment=body.environment,
                reason=body.reason.strip(),
                by=by,
            ),
        )

    async def unfreeze(self, request: Request) -> Response:
        attempt, body = await self._begin(request, "unfreeze")
        if body is None:
            assert attempt.answer is not None
            return attempt.answer
        assert attempt.identity is not None
        by = attempt.identity.name
        return await self._run(
            attempt,
            lambda: self.commands.freezes.unfreeze(
                strategy=body.strategy, environment=body.environment, by=by
            ),
        )

    async def _run(self, attempt: Attempt, call: Callable[[], Any]) -> Response:
        refused = attempt.start()
        if refused is not None:
            return refused
        try:
            result = await run_in_threadpool(call)
        except AmbiguousName as exc:
            return attempt.finish(ambiguous(exc))
        except LookupError as exc:
            return attempt.finish(problem(404, str(exc).strip("'\"")))
        except GitError as exc:
            return attempt.finish(problem(502, f"the freeze could not be written: {exc}"))
        except (NotOwner, HoldLapsed) as exc:
            return attempt.finish(moved(exc))
        self.commands.enqueue(list(result.strategies))
        return attempt.finish(JSONResponse(asdict(result)))

    async def list_freezes(self, request: Request) -> Response:
        """Every freeze covering an environment the caller may read, as the last
        reconciles found them."""
        who = await self.reader(request)
        if isinstance(who, Response):
            return who
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
