"""GitHub's errors mapped once to the promoter's ``Scm*`` errors, rate limits included.

``translate`` is the ``ScmCalls`` translator of the GitHub plugin: it knows this
package's ``GitHubHTTPError``, PyGithub's ``GithubException`` and ``requests``'
transport errors. Messages carry GitHub's own words and the status, never a URL
with credentials or a request header.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import requests
from github.GithubException import GithubException

from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmQueueRequired,
    ScmRateLimited,
    ScmUnavailable,
)

SECONDARY_LIMIT_WAIT = 60.0
"""GitHub's advice when a secondary limit gives no header: wait at least a minute."""

MAX_WAIT = 3600.0
"""Primary limits reset hourly; a reset further away than this is a broken header."""


class GitHubHTTPError(Exception):
    """A non-2xx answer from GitHub: status, GitHub's message and the response headers."""

    def __init__(self, status: int, data: Any, headers: Mapping[str, str]) -> None:
        self.status = status
        self.data = data
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.message = error_message(data)
        super().__init__(f"GitHub answered {status}: {self.message}")


def error_message(data: Any) -> str:
    """GitHub's ``message`` plus the ``errors[].message`` details, shortened."""
    if not isinstance(data, dict):
        return "no message"
    text = str(data.get("message") or "no message")
    details = [
        str(e.get("message") or e.get("code") or "")
        for e in data.get("errors") or []
        if isinstance(e, dict)
    ] + [str(e) for e in data.get("errors") or [] if isinstance(e, str)]
    details = [d for d in details if d]
    if details:
        text += ": " + "; ".join(details)
    return text[:300]


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait: ``Retry-After``, else ``x-ratelimit-reset`` when the budget is 0."""
    lower = {k.lower(): v for k, v in headers.items()}
    now = time.time() if now is None else now
    value = lower.get("retry-after")
    if value is not None:
        try:
            return _clamp(float(value))
        except ValueError:
            try:
                return _clamp(parsedate_to_datetime(value).timestamp() - now)
            except (TypeError, ValueError):
                return SECONDARY_LIMIT_WAIT
    if lower.get("x-ratelimit-remaining") == "0":
        try:
            return _clamp(float(lower.get("x-ratelimit-reset", "")) - now)
        except ValueError:
            return SECONDARY_LIMIT_WAIT
    return None


def _clamp(seconds: float) -> float:
    return min(max(seconds, 1.0), MAX_WAIT)


QUEUE_REQUIRED_WORDS = "through the merge queue"
"""GitHub's words when it refuses a merge on a branch that merges through its queue:
405 "Changes must be made through the merge queue"."""

TEMPORARY_WORDS = ("was modified", "try again", "in progress", "being computed", "not yet")
"""GitHub's words for a refusal because the state moved or is still computed."""


def lasting_refusal(status: int, message: str) -> bool:
    """Whether a 405/409/422 refusal will repeat as long as nothing changes.

    GitHub answers 405 for a merge it will not do: not mergeable (a conflict), a branch
    protection rule (required checks or reviews, merge method not allowed); those last.
    "Base/Head branch was modified. Review and try the merge again." (405 or 409) is
    the state moving, and a 422 is a request that may pass once GitHub catches up.
    """
    lower = message.lower()
    if any(word in lower for word in TEMPORARY_WORDS):
        return False
    return status == 405


def from_status(status: int, message: str, headers: Mapping[str, str]) -> ScmError:
    """The ScmError for one GitHub answer."""
    text = f"GitHub answered {status}: {message}"
    if status in (403, 429):
        wait = retry_after(headers)
        if wait is None and (status == 429 or "rate limit" in message.lower()):
            wait = SECONDARY_LIMIT_WAIT
        if wait is None and "abuse" in message.lower():
            wait = SECONDARY_LIMIT_WAIT
        if wait is not None:
            return ScmRateLimited(text, retry_after=wait)
        return ScmAuthError(text)
    if status == 401:
        return ScmAuthError(text)
    if status in (404, 410):
        return ScmNotFound(text)
    if status == 405 and QUEUE_REQUIRED_WORDS in message.lower():
        return ScmQueueRequired(text)
    if status in (405, 409, 422):
        return ScmConflict(text, lasting=lasting_refusal(status, message))
    if status >= 500:
        return ScmUnavailable(text)
    return ScmError(text)


def translate(exc: BaseException) -> ScmError | None:
    """``ScmCalls`` translator: GitHub answers and transport errors to ScmError."""
    if isinstance(exc, GitHubHTTPError):
        return from_status(exc.status, exc.message, exc.headers)
    if isinstance(exc, GithubException):
        return from_status(exc.status, error_message(exc.data), dict(exc.headers or {}))
    if isinstance(exc, requests.Timeout):
        return ScmUnavailable("GitHub did not answer in time")
    if isinstance(exc, requests.ConnectionError):
        return ScmUnavailable("GitHub could not be reached")
    if isinstance(exc, requests.RequestException):
        return ScmUnavailable(f"request to GitHub failed ({type(exc).__name__})")
    return None
