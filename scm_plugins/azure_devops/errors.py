"""Azure DevOps answers mapped once to the promoter's ``Scm*`` errors, rate limits included.

Azure DevOps explains a refusal in one JSON shape, ``{"$id": "1", "innerException": null,
"message": "TF401179: ...", "typeName": "...", "typeKey": "GitPullRequestExistsException",
"errorCode": 0, "eventId": 3000}``; ``AzureHTTPError`` keeps its message and type key with
the status and headers, and ``translate`` (the ``ScmCalls`` translator) maps it::

    429                         ScmRateLimited   Retry-After, else X-RateLimit-Reset, else 60 s
    401, 3xx, 203 (sign-in)     ScmAuthError     the PAT is refused or expired
    403                         ScmAuthError     a permission is missing; but a status a
                                ScmConflict      status policy refuses is a lasting refusal
    404                         ScmNotFound
    409, 400 on a completion    ScmConflict      lasting for a policy or a conflict; the head
                                                 moving (LastMergeSourceCommit) is temporary
    408, 5xx, no answer         ScmUnavailable
    other 4xx                   ScmError

Messages carry Azure's words and the status, never a URL with credentials or a header.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)

DEFAULT_WAIT = 60.0
"""Seconds to wait after a 429 that names no time."""
MAX_WAIT = 3600.0

HEAD_MOVED = "lastmergesourcecommit"
"""Azure's word when a completion's ``lastMergeSourceCommit`` is not the source's head:
"You must specify a valid LastMergeSourceCommit to perform this operation"."""
LASTING_WORDS = ("tf401027", "polic", "conflict", "tf401181", "not in an active state")
"""A refusal that repeats while nothing changes: policies not met (TF401027), a status a
status policy refuses, merge conflicts, a pull request no longer active."""
REFUSED_BY_POLICY = frozenset({"GitPullRequestStatusRejectedByPolicyException"})
"""403s that are a policy's refusal, not a missing permission."""


class AzureHTTPError(Exception):
    """A refusal from Azure DevOps: status, message, type key and the answer's headers."""

    def __init__(self, status: int, data: Any, headers: Mapping[str, str], what: str) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.message, self.type_key = error_text(data)
        self.what = what
        super().__init__(f"Azure DevOps answered {status} to {what}: {self.message}")


def error_text(data: Any) -> tuple[str, str]:
    """Azure's ``message`` (shortened) and ``typeKey`` of an error answer."""
    if not isinstance(data, dict):
        return "no message", ""
    message = " ".join(str(data.get("message") or "no message").split())
    return message[:300], str(data.get("typeKey") or "")


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float:
    """Seconds to wait: ``Retry-After`` (seconds or a date), else ``X-RateLimit-Reset``."""
    lower = {k.lower(): v for k, v in headers.items()}
    now = time.time() if now is None else now
    value = lower.get("retry-after", "").strip()
    if value:
        try:
            return _clamp(float(value))
        except ValueError:
            try:
                return _clamp(parsedate_to_datetime(value).timestamp() - now)
            except (TypeError, ValueError):
                pass
    reset = lower.get("x-ratelimit-reset", "").strip()
    if reset:
        try:
            return _clamp(float(reset) - now)
        except ValueError:
            pass
    return DEFAULT_WAIT


def _clamp(seconds: float) -> float:
    return min(max(seconds, 1.0), MAX_WAIT)


def from_error(exc: AzureHTTPError) -> ScmError:
    """The ScmError for one refusal of Azure DevOps."""
    status, lower = exc.status, exc.message.lower()
    text = str(exc)
    if status == 429:
        resource = exc.headers.get("x-ratelimit-resource")
        said = f"{text} (throttled: {resource})" if resource else text
        return ScmRateLimited(said, retry_after=retry_after(exc.headers))
    if status == 403 and exc.type_key in REFUSED_BY_POLICY:
        return ScmConflict(text, lasting=True)
    if status in (401, 403) or 300 <= status < 400 or status == 203:
        return ScmAuthError(text)
    if status == 404:
        return ScmNotFound(text)
    if status in (400, 409) and HEAD_MOVED in lower:
        return ScmConflict(text, lasting=False)
    if status == 409 or (status == 400 and any(w in lower for w in LASTING_WORDS)):
        return ScmConflict(text, lasting=any(w in lower for w in LASTING_WORDS))
    if status == 408 or status >= 500:
        return ScmUnavailable(text)
    return ScmError(text)


def translate(exc: BaseException) -> ScmError | None:
    """``ScmCalls`` translator: Azure's refusals and transport errors to ScmError."""
    if isinstance(exc, AzureHTTPError):
        return from_error(exc)
    if isinstance(exc, requests.exceptions.SSLError):
        return ScmUnavailable("Azure DevOps TLS verification failed (check caBundle)")
    if isinstance(exc, requests.Timeout):
        return ScmUnavailable("Azure DevOps did not answer in time")
    if isinstance(exc, requests.ConnectionError):
        return ScmUnavailable("Azure DevOps could not be reached")
    if isinstance(exc, requests.RequestException):
        return ScmUnavailable(f"request to Azure DevOps failed ({type(exc).__name__})")
    if isinstance(exc, ValueError):  # an answer that is not the JSON it should be
        return ScmUnavailable(f"Azure DevOps answered something unreadable ({exc})"[:300])
    return None
