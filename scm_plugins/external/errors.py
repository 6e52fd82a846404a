"""Typed protocol errors: ``promoter.errors.Scm*`` to JSON-RPC error objects and back.

One table, used by both sides: a plugin answers an error with ``error_object(exc)``,
the host turns it back into the same class with ``from_error_object(obj)``.
"""

from __future__ import annotations

from typing import Any

from promoter.errors import (
    PermanentError,
    PromoterError,
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmOutage,
    ScmRateLimited,
    ScmUnavailable,
    TemporaryError,
)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

NOT_FOUND = -32001
CONFLICT = -32002
RATE_LIMITED = -32003
UNAVAILABLE = -32004
AUTH = -32005
UNSUPPORTED_VERSION = -32006
PERMANENT = -32010
TEMPORARY = -32011

TYPES: dict[int, tuple[str, bool]] = {
    NOT_FOUND: ("notFound", False),
    CONFLICT: ("conflict", True),
    RATE_LIMITED: ("rateLimited", True),
    UNAVAILABLE: ("unavailable", True),
    AUTH: ("auth", False),
    UNSUPPORTED_VERSION: ("unsupportedVersion", False),
    PERMANENT: ("permanent", False),
    TEMPORARY: ("temporary", True),
    PARSE_ERROR: ("parseError", False),
    INVALID_REQUEST: ("invalidRequest", False),
    METHOD_NOT_FOUND: ("methodNotFound", False),
    INVALID_PARAMS: ("invalidParams", False),
    INTERNAL_ERROR: ("internal", False),
}
"""code -> (data.type, temporary)."""


class PluginError(ScmError, PermanentError):
    """The plugin broke the protocol, refused our version, or failed in a way it did not type;
    ``code``: the JSON-RPC error code it answered, if it answered one."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class PluginTemporaryError(ScmError, TemporaryError):
    """The plugin broke the protocol in a way a retry may not see again (a stray line on
    stdout, an answer naming no call), or answered a JSON-RPC error with ``temporary``."""


class CallTimedOut(ScmUnavailable):
    """No answer within the call's time limit: silence, the only thing that counts
    toward a hung plugin (an error answer, however quick or frequent, is an answer)."""


MAX_RETRY_AFTER = 300.0
"""The longest ``retryAfter`` of an ``unavailable`` or ``temporary`` answer honoured."""


def _retry_after(data: dict[str, Any]) -> float | None:
    retry = data.get("retryAfter")
    if isinstance(retry, bool) or not isinstance(retry, int | float) or not retry >= 0:
        return None
    return min(float(retry), MAX_RETRY_AFTER)


def error_object(exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC ``error`` member for an exception raised by a plugin's method."""
    retry_after: float | None = None
    code: int
    if isinstance(exc, ScmRateLimited):
        code, retry_after = RATE_LIMITED, exc.retry_after
    elif isinstance(exc, ScmNotFound):
        code = NOT_FOUND
    elif isinstance(exc, ScmConflict):
        code = CONFLICT
    elif isinstance(exc, ScmUnavailable):
        code = UNAVAILABLE
    elif isinstance(exc, ScmAuthError):
        code = AUTH
    elif isinstance(exc, TemporaryError):
        code = TEMPORARY
    elif isinstance(exc, PromoterError):
        code = PERMANENT
    else:
        code = INTERNAL_ERROR
    kind, temporary = TYPES[code]
    data: dict[str, Any] = {"type": kind, "temporary": temporary}
    if retry_after is None and code in (UNAVAILABLE, TEMPORARY):
        retry_after = exc.delay if isinstance(exc, TemporaryError) else None
    if retry_after is not None:
        data["retryAfter"] = retry_after
    message = str(exc) or type(exc).__name__
    return {"code": code, "message": message[:2000], "data": data}


def from_error_object(error: Any, *, plugin: str) -> ScmError:
    """The promoter error for a JSON-RPC ``error`` member a plugin answered."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return PluginError(f"plugin {plugin} answered a malformed error")
    code: int = error["code"]
    message = f"plugin {plugin}: {str(error.get('message', ''))[:2000]}"
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    assert isinstance(data, dict)
    if code == RATE_LIMITED:
        retry = data.get("retryAfter")
        delay = float(retry) if isinstance(retry, int | float) and retry >= 0 else 60.0
        return ScmRateLimited(message, retry_after=delay)
    if code in (UNAVAILABLE, TEMPORARY):  # the SCM is out for now: the plugin said so
        return ScmOutage(message, delay=_retry_after(data))
    simple: dict[int, type[ScmError]] = {
        NOT_FOUND: ScmNotFound,
        CONFLICT: ScmConflict,
        AUTH: ScmAuthError,
    }
    if code in simple:
        return simple[code](message)
    if data.get("temporary") is True:
        return PluginTemporaryError(message)
    return PluginError(message, code=code)
