"""The API's writes: set a commit status, refresh, and the manual operations.

Each begins with ``attempt.Attempts.begin`` (browser checks and who calls), reads its
bounded body, checks the role it needs (``roles.OPERATION_ROLES``) on the environments
it touches, and is audited however it ends. What a person does is done as them: a hold,
a revert, a break-glass promotion, a merge and an approval name the caller, never a
name from the body. The one write that reaches an SCM directly (a commit status) and
every operation run in the thread pool, never on the event loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import fields
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from promoter.daemon import OperationError, OperationResult
from promoter.errors import (
    CommitNotFound,
    GitError,
    HoldLapsed,
    NotOwner,
    ScmError,
    StatusNotRead,
)
from promoter.http.attempt import Attempt, Attempts
from promoter.http.body import BodyTooLarge, read_body
from promoter.http.identity import Identity
from promoter.http.ports import Commands, Views
from promoter.http.problems import invalid, moved, problem, scm_problem, too_large
from promoter.http.roles import OPERATION_ROLES, Scope
from promoter.models import CommitStatus, Phase

SHORT_SHA_RE = re.compile(r"^[0-9a-f]{4,40}$")
"""A commit SHA, or a prefix of one that the daemon resolves in the repository."""

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
EVERY_STRATEGY = Scope("*")
"""What a write that touches no strategy needs: a grant not limited to some strategies."""
MAX_NAME = 255
MAX_REASON = 1024
"""A reason goes into the ledger note, in git history for ever: a paragraph at most."""


class StatusBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, max_length=255)
    phase: Phase
    description: str = Field(default="", max_length=1024)
    url: str = Field(default="", max_length=2048)
    force: bool = False
    """Write it even though no environment reads it (a CI job reporting on every commit)."""


class OperationBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    environment: str = Field(min_length=1, max_length=MAX_NAME)
    reason: str = Field(default="", max_length=MAX_REASON)
    to: str | None = Field(default=None, max_length=64)
    dry_sha: str | None = Field(default=None, alias="drySha", max_length=64)
    user: str | None = Field(default=None, max_length=MAX_NAME)
    """Only the caller's own name: an approval is recorded as the caller."""


class RefreshBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)


def operation_json(result: OperationResult) -> dict[str, Any]:
    """An operation's answer: its fields in order, camelCase (``dry_sha`` is ``drySha``,
    ``from_`` is ``from``)."""
    return {_camel(f.name): getattr(result, f.name) for f in fields(result)}


def _camel(name: str) -> str:
    first, *rest = name.rstrip("_").split("_")
    return first + "".join(part.capitalize() for part in rest)


def _calls(
    commands: Commands, name: str, body: OperationBody, who: Identity, revert_holds: bool
) -> dict[str, Callable[[], OperationResult]]:
    ops, env, by = commands.operations, body.environment, who.name
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

    def _scope(self, operation: str, strategy: str, environment: str) -> Scope:
        """The environments ``operation`` acts on: a release lifts holds here and in every
        later environment; a blocked change is let through every environment."""
        branches = self._branches(strategy)
        branch = next((b for b in branches if environment in (b, b.rsplit("/", 1)[-1])), None)
        if operation == "approve-change":
            return Scope(strategy, tuple(branches))
        if branch is None:
            return Scope(strategy, (environment,))
        if operation == "release":
            return Scope(strategy, tuple(branches[branches.index(branch) :]))
        return Scope(strategy, (branch,))

    async def operate(self, request: Request) -> Response:
        """One manual operation on one environment (``{"environment": ...}``)."""
        name, operation = request.path_params["name"], request.path_params["operation"]
        attempt = await self.attempts.begin(
            request, operation, strategy=name, repository=self._repository(name)
        )
        if attempt.answer is not None:
            return attempt.answer
        if operation not in OPERATIONS:
            return attempt.finish(
                problem(404, f"no operation {operation!r}; use {', '.join(OPERATIONS)}")
            )
        try:
            body = OperationBody.model_validate(json.loads(await read_body(request) or b"{}"))
        except BodyTooLarge:
            return attempt.finish(too_large())
        except ValueError as exc:
            return attempt.finish(invalid("body must be JSON with at least an environment", exc))
        attempt.environment = body.environment
        attempt.detail = {"reason": body.reason, "drySha": body.dry_sha or "", "to": body.to or ""}
        scope = self._scope(operation, name, body.environment)
        denied = attempt.authorize(OPERATION_ROLES[operation], scope)
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
        call = _calls(self.commands, name, body, attempt.identity, revert_holds)[operation]
        return await self._run(attempt, name, operation, call)

    async def _run(
        self, attempt: Attempt, name: str, operation: str, call: Callable[[], OperationResult]
    ) -> Response:
        attempt.start()
        try:
            result = await run_in_threadpool(call)
        except OperationError as exc:
            return attempt.finish(problem(exc.status, str(exc)))
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

    async def set_status(self, request: Request) -> Response:
        name, sha = request.path_params["repo"], request.path_params["sha"].lower()
        known = self.views.has_repository(name)
        attempt = await self.attempts.begin(
            request, "set-status", repository=name if known else None
        )
        if attempt.answer is not None:
            return attempt.answer
        attempt.detail = {"sha": sha[:40]}
        if not known:
            return attempt.finish(problem(404, f"no repository named {name!r}"))
        if not SHORT_SHA_RE.match(sha):
            return attempt.finish(
                problem(422, "sha must be a hexadecimal commit SHA (4 to 40 characters)")
            )
        try:
            body = StatusBody.model_validate(json.loads(await read_body(request) or b"null"))
        except BodyTooLarge:
            return attempt.finish(too_large())
        except ValueError as exc:  # pydantic's ValidationError is one too
            return attempt.finish(invalid("invalid status", exc))
        attempt.detail.update(key=body.key, phase=body.phase.value, url=body.url)
        if body.force:
            attempt.detail["force"] = "true"
        served = [s.name for s in self.views.strategies() if s.repository == name]
        for scope in [Scope(s) for s in served] or [EVERY_STRATEGY]:
            denied = attempt.authorize("operator", scope)
            if denied is not None:
                return denied
        attempt.start()
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
            return attempt.finish(problem(422, str(exc)))
        except StatusNotRead as exc:
            return attempt.finish(problem(409, str(exc)))
        except LookupError:
            return attempt.finish(problem(404, f"no repository named {name!r}"))
        except ScmError as exc:
            return attempt.finish(scm_problem("the SCM refused the status", exc))
        except (NotOwner, HoldLapsed) as exc:
            return attempt.finish(moved(exc))
        except Exception as exc:
            attempt.finish(problem(500, f"set-status failed: {type(exc).__name__}"))
            raise
        answer = {
            "repository": name,
            "sha": sha,
            "status": status.model_dump(mode="json"),
            "enqueued": keys,
        }
        return attempt.finish(JSONResponse(answer, status_code=201))

    async def refresh(self, request: Request) -> Response:
        attempt = await self.attempts.begin(request, "refresh")
        if attempt.answer is not None:
            return attempt.answer
        try:
            raw = await read_body(request)
        except BodyTooLarge:
            return attempt.finish(too_large())
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return attempt.finish(problem(400, "body must be JSON or empty"))
        try:
            wanted = RefreshBody.model_validate(data if isinstance(data, dict) else {}).strategy
        except ValidationError as exc:
            return attempt.finish(invalid("strategy must be a strategy's name", exc))
        attempt.strategy, attempt.repository = wanted, self._repository(wanted or "")
        if wanted is not None and self.views.strategy(wanted) is None:
            return attempt.finish(problem(404, f"no strategy named {wanted!r}"))
        keys = [str(wanted)] if wanted else [s.name for s in self.views.strategies()]
        for scope in [Scope(key) for key in keys] or [EVERY_STRATEGY]:
            denied = attempt.authorize("operator", scope)
            if denied is not None:
                return denied
        self.commands.enqueue(keys)
        return attempt.finish(JSONResponse({"enqueued": keys}, status_code=202))
