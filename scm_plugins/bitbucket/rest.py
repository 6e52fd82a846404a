"""REST calls to one Bitbucket through atlassian-python-api's client: counted, never retried.

``AtlassianRestAPI`` gives the session: authentication (basic for an app password or an
API token, a bearer for an access token, or a ``requests`` auth that adds an OAuth token
to each request), TLS verification (``caBundle``), the base URL with its context path and
the JSON headers. Its high-level objects are not used: they read a workspace and a
repository before each pull request call, sleep in the calling thread on a 429
(``retry_with_header``), raise without the answer's headers (``Retry-After``) and log
each request's headers at debug. So each REST path is called through
``AtlassianRestAPI.request(advanced_mode=True)``, which returns the raw answer, and this
module does the rest: one request per call (no retries: the work queue owns them), the
status and headers handed to ``ScmCalls`` (metric, budget, credential pause), an answer
of 400 or more raised as ``BitbucketHTTPError`` for ``errors.translate``, and the
library's debug records dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import requests
from atlassian.rest_client import AtlassianRestAPI

from promoter.errors import ScmAuthError
from scm_plugins.bitbucket.errors import BitbucketHTTPError
from scm_plugins.budget import Cost, Priority
from scm_plugins.calls import ScmCalls

TIMEOUT = 30
"""Seconds to wait for Bitbucket's answer (the library takes whole seconds)."""
MERGE_OPERATIONS = frozenset({"merge_pull_request"})


class _NoDebug(logging.Filter):
    """Drops atlassian-python-api's debug records: they show request headers and bodies."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO


for _name in ("atlassian", "atlassian.rest_client"):
    logging.getLogger(_name).addFilter(_NoDebug())


def cost(operation: str, method: str, priority: Priority | None = None) -> Cost:
    """A merge goes first, then the reads a merge asked for (``priority``), then writes,
    then every other read; each request weighs one."""
    if priority is None:
        if operation in MERGE_OPERATIONS:
            priority = Priority.MERGE
        else:
            priority = Priority.READ if method == "GET" else Priority.WRITE
    return Cost(priority=priority, points=1)


class BitbucketApi:
    """One Bitbucket's REST API (Cloud: ``https://api.bitbucket.org``; Data Center: the
    instance's URL with its context path). Thread-safe: ``requests``' session pools
    connections for the daemon's workers."""

    def __init__(
        self,
        *,
        url: str,
        calls: ScmCalls,
        session: requests.Session | None = None,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        timeout: int = TIMEOUT,
        renew: Callable[[], bool] | None = None,
    ) -> None:
        """``renew``: called after a 401; True when it dropped a credential that can be had
        anew (an OAuth access token), and the call is then made once more."""
        self.url = url.rstrip("/")
        self._calls = calls
        self._renew = renew
        self._rest = AtlassianRestAPI(
            self.url,
            username=username,
            password=password,
            token=token,
            timeout=timeout,
            session=session,
            advanced_mode=True,
            backoff_and_retry=False,
            retry_with_header=False,
        )

    @property
    def session(self) -> requests.Session:
        session: requests.Session = self._rest.session
        return session

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        priority: Priority | None = None,
        **fields: object,
    ) -> Any:
        """One counted request to ``path`` (below the base URL); its parsed JSON (None when
        empty). ``fields`` go to the call's log line (``pr``, ``sha``, ``head``, ...)."""
        try:
            return self._call(operation, method, path, params, body, priority, fields)
        except ScmAuthError as refused:
            cause = refused.__cause__
            expired = isinstance(cause, BitbucketHTTPError) and cause.status == 401
            if not (expired and self._renew is not None and self._renew()):
                raise
        return self._call(operation, method, path, params, body, priority, fields)

    def _call(
        self,
        operation: str,
        method: str,
        path: str,
        params: Mapping[str, str | int] | None,
        body: Mapping[str, Any] | None,
        priority: Priority | None,
        fields: Mapping[str, object],
    ) -> Any:
        what = f"{method} {path}"
        with self._calls.call(operation, cost(operation, method, priority), **fields) as receipt:
            response = self._rest.request(
                method,
                path,
                json=dict(body) if body is not None else None,
                params=dict(params) if params else None,
                advanced_mode=True,
            )
            receipt.answered(response.status_code, response.headers)
            if response.status_code >= 400:
                raise BitbucketHTTPError(
                    response.status_code, _data(response), response.headers, what
                )
            return response.json() if response.content else None

    def close(self) -> None:
        self._rest.close()


def _data(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return {"message": (response.text or response.reason or "")[:200]}
