"""The API's error answers: JSON ``{"error": ...}`` that never carries a secret."""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError
from starlette.responses import JSONResponse

from promoter.errors import (
    AmbiguousName,
    HoldLapsed,
    NotOwner,
    ScmError,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.http.api.body import MAX_BODY
from promoter.redaction import scrub


def problem(status: int, message: str, **extra: Any) -> JSONResponse:
    """An error answer; its message never carries a secret the process knows."""
    return JSONResponse({"error": scrub(message), **extra}, status_code=status)


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


MOVED = "x-promoter-moved"
"""On ``moved``'s answer: nothing was written, the replica that received the request
may send it on to the repository's next owner."""


def moved(exc: NotOwner | HoldLapsed) -> JSONResponse:
    """Kubernetes mode, sharded: the repository moved to another replica meanwhile (or
    this replica's hold on it lapsed for a moment)."""
    response = problem(503, f"{exc}; try again")
    response.headers["Retry-After"] = "1"
    response.headers[MOVED] = "1"
    return response


def ambiguous(exc: AmbiguousName) -> JSONResponse:
    """409: a name that means several environments, and the branches it could mean."""
    return problem(409, str(exc), candidates=list(exc.candidates))


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
