"""The API's manual operations on a strategy's environments (hold, release, revert, ...).

Each begins with ``attempt.Attempts.begin`` (browser checks and who calls), reads its
bounded body, checks the role it needs on the environments it touches (its row of
``promoter.config.operations``: role and reach), and is audited however it ends. An
environment named by a last part several branches share is answered 409 with them
(``promoter.config.names``), never taken for the first. What a person does is done as
them: a hold, a revert, a break-glass promotion, a merge and an approval name the caller,
never a name from the body. Every operation runs in the thread pool, never on the event
loop. A commit status and a refresh are in ``statuses``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from promoter.config import (
    STRATEGY_OPERATIONS,
    Operation,
    environment_branch,
    operation,
)
from promoter.daemon import OperationError, OperationResult
from promoter.errors import (
    AmbiguousName,
    GitError,
    HoldLapsed,
    NotOwner,
    ScmError,
)
from promoter.http.access import Identity, Scope
from promoter.http.api.attempt import Attempt, Attempts
from promoter.http.api.body import BodyTooLarge, read_body
from promoter.http.api.problems import (
    ambiguous,
    invalid,
    moved,
    problem,
    scm_problem,
    too_large,
)
from promoter.http.ports import Commands, Views

OPERATIONS = STRATEGY_OPERATIONS
MAX_NAME = 255
MAX_REASON = 1024
"""A reason goes into the ledger note, in git history for ever: a paragraph at most."""


class OperationBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    environment: str = Field(min_length=1, max_length=MAX_NAME)
    reason: str = Field(default="", max_length=MAX_REASON)
    to: str | None = Field(default=None, max_length=64)
    dry_sha: str | None = Field(default=None, alias="drySha", max_length=64)
    user: str | None = Field(default=None, max_length=MAX_NAME)
    """Only the caller's own name: an approval is recorded as the caller."""


def operation_json(result: OperationResult) -> dict[str, Any]:
    """An operation's answer: its fields in order, camelCase (``dry_sha`` is ``drySha``,
    ``from_`` is ``from``)."""
    return {_camel(f.name): getattr(result, f.name) for f in fields(result)}


def _camel(name: str) -> str:
    first, *rest = name.rstrip("_").split("_")
    return first + "".join(part.capitalize() for part in rest)


def _calls(
    commands: Commands, name: str, body: OperationBody, env: str, who: Identity, revert_holds: bool
) -> dict[str, Callable[[], OperationResult]]:
    """Each operation's call of the port; ``env``: the environment's branch, once found."""
    ops, by = commands.operations, who.name
    return {
        "revert": lambda: ops.revert(name, env, to=body.to, by=by),
        "hold": lambda: ops.hold(name, env, dry_sha=body.dry_sha, reason=body.reason, by=by),
        "release": lambda: ops.release(
            name, env, dry_sha=body.dry_sha, by=by, revert_holds=revert_holds
        ),
        "promote": lambda: ops.promote(name, env, reason=body.reason, by=by),
        "merge": lambda: ops.merge(name, env, by=by),
        "approve": lambda: ops.approve(name, env, user=by),
        "pin": lambda: ops.pin(name, env, dry_sha=body.dry_sha or "", reason=body.reason),
        "unpin": lambda: ops.unpin(name, env),
        "approve-change": lambda: ops.approve_change(name, dry_sha=body.dry_sha or ""),
    }


class WriteRoutes:
    def __init__(self, views: Views, commands: Commands, attempts: Attempts) -> None:
        self.views = views
        self.commands = commands
        self.attempts = attempts

    def _repository(self, strategy: str) -> str | None:
        found = self.views.strategy(strategy)
        return found.repository if found is not None else None

    def _branches(self, strategy: str) -> list[str]:
        found = self.views.strategy(strategy)
        return [e.branch for e in found.environments] if found is not None else []

    def _scope(self, op: Operation, strategy: str, environment: str) -> tuple[Scope, str]:
        """The environments ``op`` acts on (a release lifts holds here and in every later
        environment; a blocked change is let through every environment), and the branch
        ``environment`` names (as given when it names none). ``AmbiguousName``."""
        branches = self._branches(strategy)
        if op.reach == "strategy":
            return Scope(strategy, tuple(branches)), environment
        branch = environment_branch(branches, environment, strategy=strategy)
        if branch is None:
            return Scope(strategy, (environment,)), environment
        if op.reach == "later":
            return Scope(strategy, tuple(branches[branches.index(branch) :])), branch
        return Scope(strategy, (branch,)), branch

    def endpoint(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler of operation ``name``'s own route."""

        async def endpoint(request: Request) -> Response:
            return await self.operate(request, name)

        return endpoint

    async def any_operation(self, request: Request) -> Response:
        """``/api/v1/strategies/{name}/{operation}`` for a name no row has: 404, audited."""
        return await self.operate(request, request.path_params["operation"])

    async def operate(self, request: Request, operation_name: str) -> Response:
        """One manual operation on one environment (``{"environment": ...}``)."""
        name = request.path_params["name"]
        attempt = await self.attempts.begin(
            request, operation_name, strategy=name, repository=self._repository(name)
        )
        if attempt.answer is not None:
            return attempt.answer
        op = operation(operation_name)
        if op is None or not op.on_strategy:
            return attempt.finish(
                problem(404, f"no operation {operation_name!r}; use {', '.join(OPERATIONS)}")
            )
        try:
            body = OperationBody.model_validate(json.loads(await read_body(request) or b"{}"))
        except BodyTooLarge:
            return attempt.finish(too_large())
        except ValueError as exc:
            return attempt.finish(invalid("body must be JSON with at least an environment", exc))
        attempt.environment = body.environment
        attempt.detail = {"reason": body.reason, "drySha": body.dry_sha or "", "to": body.to or ""}
        try:
            scope, branch = self._scope(op, name, body.environment)
        except AmbiguousName as exc:
            return attempt.ambiguous(op.role, name, exc)
        denied = attempt.authorize(op.role, scope)
        if denied is not None:
            return denied
        assert attempt.identity is not None
        if body.user is not None and body.user != attempt.identity.name:
            return attempt.finish(
                problem(
                    422,
                    f"an approval is recorded as the caller ({attempt.identity.name}), never"
                    " as a name in the body: leave user out",
                )
            )
        revert_holds = attempt.allows("admin", scope)
        call = _calls(self.commands, name, body, branch, attempt.identity, revert_holds)[op.name]
        return await self._run(attempt, name, op.name, call)

    async def _run(
        self, attempt: Attempt, name: str, operation: str, call: Callable[[], OperationResult]
    ) -> Response:
        refused = attempt.start()
        if refused is not None:
            return refused
        try:
            result = await run_in_threadpool(call)
        except OperationError as exc:
            return attempt.finish(problem(exc.status, str(exc)))
        except AmbiguousName as exc:
            return attempt.finish(ambiguous(exc))
        except ScmError as exc:
            return attempt.finish(scm_problem(f"{operation} failed", exc))
        except (NotOwner, HoldLapsed) as exc:
            return attempt.finish(moved(exc))
        except GitError as exc:
            return attempt.finish(problem(502, f"{operation} failed: {exc}"))
        except Exception as exc:
            attempt.finish(problem(500, f"{operation} failed: {type(exc).__name__}"))
            raise
        self.commands.enqueue([name])
        return attempt.finish(JSONResponse(operation_json(result)))
