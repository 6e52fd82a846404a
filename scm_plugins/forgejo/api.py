"""A small Forgejo / Gitea REST client (``/api/v1``): token auth and errors translated once.

HTTP statuses map to ``promoter.errors``: 401/403 ``ScmAuthError``, 404
``ScmNotFound``, 405/409 ``ScmConflict`` (not mergeable now, head out of date, PR
exists), 429 ``ScmRateLimited`` (``Retry-After``), 5xx and connection failures
``ScmUnavailable``. The token is sent as ``Authorization: token ...`` and never logged.
"""

from __future__ import annotations

import logging
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

log = logging.getLogger("promoter.forgejo")


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.reason or ""
    if isinstance(data, dict):
        return str(data.get("message") or data.get("error") or "")[:300]
    return ""


def error_for(response: requests.Response, what: str) -> ScmError:
    status = response.status_code
    text = f"{what}: {status} {_message(response)}".strip()
    if status == 429:
        retry = response.headers.get("Retry-After", "")
        return ScmRateLimited(text, retry_after=float(retry) if retry.isdigit() else 60.0)
    if status in (401, 403):
        return ScmAuthError(text)
    if status == 404:
        return ScmNotFound(text)
    if status in (405, 409):
        return ScmConflict(text)
    if status >= 500:
        return ScmUnavailable(text)
    return ScmError(text)


class ForgejoApi:
    """``request(method, path)`` against ``{url}/api/v1``; thread-safe (one session per call)."""

    def __init__(self, url: str, token: str, *, timeout: float = 20.0) -> None:
        self.base = url.rstrip("/") + "/api/v1"
        self._headers = {"Authorization": f"token {token}", "Accept": "application/json"}
        self._timeout = timeout

    def request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        what = f"{method} {path}"
        try:
            response = requests.request(
                method,
                self.base + path,
                json=json,
                params=params,
                headers=self._headers,
                timeout=self._timeout,
            )
        except requests.RequestException as exc:
            raise ScmUnavailable(f"{what}: {type(exc).__name__}") from exc
        log.debug(
            "forgejo call", extra={"method": method, "path": path, "status": response.status_code}
        )
        if response.status_code >= 400:
            raise error_for(response, what)
        if not response.content:
            return None
        return response.json()
