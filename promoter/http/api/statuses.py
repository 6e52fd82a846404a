"""The API's writes that name no environment: a commit status, and a refresh.

Each begins with ``attempt.Attempts.begin`` (browser checks and who calls), reads its
bounded body, checks the role its row of ``promoter.config.operations`` needs on every
strategy it touches, and is audited however it ends. A commit status is the one write
that reaches an SCM directly; it runs in the thread pool, never on the event loop.
"""

from __future__ import annotations

import json
import re
from functools import partial

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from promoter.config import ROLES
from promoter.errors import CommitNotFound, HoldLapsed, NotOwner, ScmError, StatusNotRead
from promoter.http.access import Scope
from promoter.http.api.attempt import Attempts
from promoter.http.api.body import BodyTooLarge, read_body
from promoter.http.api.problems import invalid, moved, problem, scm_problem, too_large
from promoter.http.api.writes import MAX_NAME
from promoter.http.ports import Commands, Views
from promoter.models import CommitStatus, Phase

SHORT_SHA_RE = re.compile(r"^[0-9a-f]{4,40}$")
"""A commit SHA, or a prefix of one that the daemon resolves in the repository."""
EVERY_STRATEGY = Scope("*")
"""What a write that touches no strategy needs: a grant not limited to some strategies."""


class StatusBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, max_length=255)
    phase: Phase
    description: str = Field(default="", max_length=1024)
    url: str = Field(default="", max_length=2048)
    force: bool = False
    """Write it even though no environment reads it (a CI job reporting on every commit)."""


class RefreshBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    strategy: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)


class StatusRoutes:
    """The routes of ``set-status`` and ``refresh``."""

    def __init__(self, views: Views, commands: Commands, attempts: Attempts) -> None:
        self.views = views
        self.commands = commands
        self.attempts = attempts

    def _repository(self, strategy: str) -> str | None:
        found = self.views.strategy(strategy)
        return found.repository if found is not None else None

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
            denied = attempt.authorize(ROLES["set-status"], scope)
            if denied is not None:
                return denied
        refused = attempt.start()
        if refused is not None:
            return refused
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
            denied = attempt.authorize(ROLES["refresh"], scope)
            if denied is not None:
                return denied
        self.commands.enqueue(keys)
        return attempt.finish(JSONResponse({"enqueued": keys}, status_code=202))
