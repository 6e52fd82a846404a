"""Bitbucket's answers mapped once to the promoter's ``Scm*`` errors, for Cloud and Data Center.

Error bodies come in two shapes: Cloud's ``{"type": "error", "error": {"message", "detail"}}``
and Data Center's ``{"errors": [{"message", "exceptionName", ...}]}``. The tree::

    BitbucketHTTPError (an answer of 400 or more)
      429                 -> ScmRateLimited (Retry-After, else DEFAULT_RETRY_AFTER)
      401, 403            -> ScmAuthError
      404, 410            -> ScmNotFound
      409                 -> ScmConflict (lasting unless the words say the state moved)
      400 on a merge      -> ScmConflict, lasting (Cloud: a conflict, a merge check)
      5xx, 408            -> ScmUnavailable
      anything else       -> ScmError
    requests' transport errors -> ScmUnavailable (TLS: "check caBundle")

Messages carry Bitbucket's own words and the status, never a header or a URL with
credentials; ``ScmCalls`` scrubs every known secret from them as well.
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

DEFAULT_RETRY_AFTER = 60.0
"""Seconds to wait after a 429 that names no time (Bitbucket Cloud's hourly limit sends
none: its window rolls, so room comes back as the oldest calls of the hour leave it)."""
MAX_WAIT = 3600.0

OUT_OF_DATE_WORDS = ("out-of-date", "out of date", "has been updated", "try again")
"""Words of a refusal because the pull request moved (Data Center's
``PullRequestOutOfDateException``): read again and retry soon."""


class BitbucketHTTPError(Exception):
    """An answer of 400 or more: its status, Bitbucket's message and the headers."""

    def __init__(self, status: int, data: Any, headers: Mapping[str, str], what: str) -> None:
        self.status = status
        self.data = data
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.message = error_message(data)
        self.exception_name = exception_name(data)
        self.what = what
        super().__init__(f"Bitbucket answered {status} to {what}: {self.message}")


def error_message(data: Any) -> str:
    """Bitbucket's words from an error body of either product, shortened."""
    if not isinstance(data, dict):
        return "no message"
    error = data.get("error")
    if isinstance(error, dict):
        text = str(error.get("message") or "no message")
        if error.get("detail"):
            text += f": {error['detail']}"
        return text[:300]
    errors = data.get("errors")
    if isinstance(errors, list):
        said = [str(e.get("message") or "") for e in errors if isinstance(e, dict)]
        vetoes = [
            str(v.get("summaryMessage") or v.get("detailedMessage") or "")
            for e in errors
            if isinstance(e, dict)
            for v in e.get("vetoes") or []
            if isinstance(v, dict)
        ]
        text = "; ".join(s for s in [*said, *vetoes] if s)
        return (text or "no message")[:300]
    return str(data.get("message") or "no message")[:300]


def exception_name(data: Any) -> str:
    """Data Center's ``exceptionName`` of the first error, "" for Cloud and others."""
    if isinstance(data, dict) and isinstance(data.get("errors"), list) and data["errors"]:
        first = data["errors"][0]
        if isinstance(first, dict):
            return str(first.get("exceptionName") or "")
    return ""


def retry_after(
    headers: Mapping[str, str], *, now: float | None = None, default: float = DEFAULT_RETRY_AFTER
) -> float:
    """Seconds to wait after a 429: ``Retry-After`` (seconds or a date), else ``default``."""
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    if value:
        try:
            return _clamp(float(value))
        except ValueError:
            try:
                when = parsedate_to_datetime(value).timestamp()
                return _clamp(when - (time.time() if now is None else now))
            except (TypeError, ValueError):
                pass
    return default


def _clamp(seconds: float) -> float:
    return min(max(seconds, 0.0), MAX_WAIT)


def from_answer(
    error: BitbucketHTTPError, *, product: str, wait: float = DEFAULT_RETRY_AFTER
) -> ScmError:
    """The ScmError for one Bitbucket answer of 400 or more (``wait``: after a 429 that
    says no time)."""
    status, message = error.status, error.message
    text = f"{product} answered {status}: {message}"
    if status == 429:
        return ScmRateLimited(text, retry_after=retry_after(error.headers, default=wait))
    if status in (401, 403):
        return ScmAuthError(text)
    if status in (404, 410):
        return ScmNotFound(text)
    if status == 409:
        moved = "OutOfDate" in error.exception_name or any(
            word in message.lower() for word in OUT_OF_DATE_WORDS
        )
        return ScmConflict(text, lasting=not moved)
    if status == 400 and error.what.endswith("/merge"):
        return ScmConflict(text, lasting=True)
    if status == 408 or status >= 500:
        return ScmUnavailable(text)
    return ScmError(text)


def translate(
    exc: BaseException, *, product: str, wait: float = DEFAULT_RETRY_AFTER
) -> ScmError | None:
    """``ScmCalls`` translator: Bitbucket's answers and transport errors to ScmError."""
    if isinstance(exc, BitbucketHTTPError):
        return from_answer(exc, product=product, wait=wait)
    if isinstance(exc, requests.exceptions.SSLError):
        return ScmUnavailable(f"{product}: TLS verification failed (check caBundle)")
    if isinstance(exc, requests.Timeout):
        return ScmUnavailable(f"{product} did not answer in time")
    if isinstance(exc, requests.ConnectionError):
        return ScmUnavailable(f"{product} could not be reached")
    if isinstance(exc, requests.JSONDecodeError):
        return ScmUnavailable(f"{product} answered something that is not JSON")
    if isinstance(exc, requests.RequestException):
        return ScmUnavailable(f"request to {product} failed ({type(exc).__name__})")
    return None
