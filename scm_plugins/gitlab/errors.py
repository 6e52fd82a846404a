"""Translates python-gitlab and requests exceptions into ``promoter.errors.Scm*``, in one place.

GitLab's refusal codes vary by version (405, 406, 409 or 422 for a merge it will
not do now); all of them are ``ScmConflict``. 429 becomes ``ScmRateLimited`` with
the wait read from ``Retry-After`` or ``RateLimit-Reset``. Messages never carry
the token: ``translate`` blanks it out wherever it might appear.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

import requests
from gitlab.exceptions import GitlabError

from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)

DEFAULT_RETRY_AFTER = 60.0
"""Seconds to wait after a 429 that names no time."""

CONFLICT_CODES = frozenset({405, 406, 409, 422})
HEADERS_ATTR = "promoter_response_headers"
"""Attribute under which the client hangs the response headers on a GitLab error."""


def response_headers(exc: BaseException) -> Mapping[str, str]:
    """The HTTP response headers attached to ``exc`` or to one of its causes, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        headers = getattr(seen, HEADERS_ATTR, None)
        if headers is not None:
            return dict(headers)
        seen = seen.__cause__ or seen.__context__
    return {}


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float:
    """Seconds to wait before retrying, from ``Retry-After`` or ``RateLimit-Reset``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    now = time.time() if now is None else now
    value = lowered.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - now)
            except (TypeError, ValueError):
                pass
    reset = lowered.get("ratelimit-reset")
    if reset:
        try:
            return max(0.0, float(reset) - now)
        except ValueError:
            pass
    return DEFAULT_RETRY_AFTER


def redact(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret`` blanked out."""
    return text.replace(secret, "[redacted]") if secret else text


def scrub(exc: BaseException, secret: str) -> None:
    """Blank ``secret`` out of ``exc`` and its causes, in place, so tracebacks are safe too."""
    seen: BaseException | None = exc
    while secret and seen is not None:
        if secret in str(seen):
            seen.args = tuple(redact(a, secret) if isinstance(a, str) else a for a in seen.args)
            if isinstance(seen, GitlabError) and isinstance(seen.error_message, str):
                seen.error_message = redact(seen.error_message, secret)
        seen = seen.__cause__ or seen.__context__


def _gitlab_message(exc: GitlabError) -> str:
    message = exc.error_message
    if isinstance(message, list | tuple):
        message = "; ".join(str(m) for m in message)
    return str(message) or type(exc).__name__


TEMPORARY_WORDS = ("does not match head", "checking", "unchecked", "try again", "locked")
"""GitLab's words for a refusal because the head moved or mergeability is computed."""


def lasting_refusal(code: int, message: str) -> bool:
    """Whether a refused merge will repeat as long as nothing changes.

    406 "Branch cannot be merged" (any code with those words, or "conflict") is a
    conflict: it lasts. A bare 405 covers a merge status still being checked as well
    as rules, so it counts as temporary here; the merge path reads the MR once to say
    more (a draft or a closed MR lasts). 409 "SHA does not match HEAD of source
    branch" is the head moving.
    """
    lower = message.lower()
    if any(word in lower for word in TEMPORARY_WORDS):
        return False
    return code == 406 or "cannot be merged" in lower or "conflict" in lower


def translate(exc: BaseException, *, secret: str = "") -> ScmError | None:
    """The ``ScmError`` for a python-gitlab or requests exception; None for anything else."""
    scrub(exc, secret)
    if isinstance(exc, GitlabError):
        code = exc.response_code
        text = redact(_gitlab_message(exc), secret)
        said = f"GitLab answered {code}: {text}" if code else f"GitLab client error: {text}"
        if code == 429:
            return ScmRateLimited(said, retry_after=retry_after(response_headers(exc)))
        if code in (401, 403):
            return ScmAuthError(said)
        if code == 404:
            return ScmNotFound(said)
        if code in CONFLICT_CODES:
            return ScmConflict(said, lasting=lasting_refusal(code, said))
        if code is None or code == 408 or code >= 500:
            return ScmUnavailable(said)
        return ScmError(said)
    if isinstance(exc, requests.exceptions.SSLError):
        return ScmUnavailable("GitLab TLS verification failed (check caBundle)")
    if isinstance(exc, requests.RequestException):
        # The message names the URL (never the token, which travels in a header).
        return ScmUnavailable(redact(f"GitLab unreachable: {type(exc).__name__}: {exc}", secret))
    return None
