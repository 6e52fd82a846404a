"""Azure DevOps REST calls over ``requests``: every call counted, each with its deadline.

One ``requests.Session`` per thread (a session is not safe to share between threads), and
what a daemon needs on top of it, which Microsoft's ``azure-devops`` SDK does not give
(docs/azure-devops.md says why this client and not the SDK):

* a time limit on every call (``timeout``), and no retry and no sleep inside: the work
  queue owns backoff and honours ``Retry-After`` (``ScmCalls`` pauses the credential);
* every call counted through ``ScmCalls`` with its rate-limit headers recorded
  (``X-RateLimit-Remaining`` feeds the gauge), and a refusal raised as ``AzureHTTPError``
  with Azure's message, type key and headers for ``errors.translate``;
* conditional reads: the ETag of the last answer per URL, reused on 304, until the
  caller lets go of it (``forget``) or the bound pushes it out;
* the PAT as basic auth with an empty user, and ``X-TFS-FedAuthRedirect: Suppress`` so
  that a refused PAT is a 401, not a redirect to a sign-in page (which is refused too, as
  is a 203 with HTML: Azure's other way of asking for a sign-in);
* no redirect followed, no ``~/.netrc`` read (``trust_env`` off), a CA bundle for a Server
  with its own certificate authority.

Concurrency: the ETag cache has its own lock; sessions are thread-local.
"""

from __future__ import annotations

import base64
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import requests

from scm_plugins.azure_devops.errors import AzureHTTPError
from scm_plugins.calls import ScmCalls

USER_AGENT = "promoter-azure-devops-scm"
ETAG_ENTRIES = 50_000
"""Answers remembered for conditional reads (commit statuses of the commits in work)."""


def basic_auth(token: str) -> str:
    """``Authorization`` for a PAT: basic auth with an empty user name."""
    return "Basic " + base64.b64encode(f":{token}".encode()).decode("ascii")


def segment(name: str) -> str:
    """One path segment (a project or repository name may hold spaces)."""
    return quote(name, safe="")


class AzureClient:
    """Sends requests to one organization (Services) or collection (Server)."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        calls: ScmCalls,
        api_version: str,
        timeout: float,
        ca_bundle: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_version = api_version
        self._calls = calls
        self._timeout = timeout
        self._verify: bool | str = ca_bundle or True
        self._headers = {
            "Authorization": basic_auth(token),
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            "X-TFS-FedAuthRedirect": "Suppress",
        }
        self._local = threading.local()
        self._sessions: weakref.WeakSet[requests.Session] = weakref.WeakSet()
        """For ``close``; a finished thread's session goes with the thread."""
        self._etags: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def request(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        conditional: bool = False,
        version: str | None = None,
        **fields: object,
    ) -> Any:
        """One counted call to ``{base}{path}``; the parsed JSON answer (None when empty).

        With ``conditional``, a GET sends the ETag of the last answer for the same URL and
        reuses that answer on 304. ``version`` overrides the API version (a preview API).
        """
        query = {**(params or {}), "api-version": version or self.api_version}
        key = answer_key(path, query)
        cached = self._cached(key) if conditional else None
        headers = dict(self._headers)
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        if body is not None:
            headers["Content-Type"] = "application/json"
        with self._calls.call(operation, **fields) as receipt:
            response = self._session().request(
                method,
                self.base_url + path,
                params=query,
                json=body,
                headers=headers,
                timeout=self._timeout,
                verify=self._verify,
                allow_redirects=False,
            )
            receipt.answered(response.status_code, response.headers)
            if response.status_code == 304 and cached is not None:
                return cached[1]
            data = _json(response)
            if response.status_code >= 300 or response.status_code == 203:
                raise AzureHTTPError(
                    response.status_code, data, response.headers, f"{method} {path}"
                )
            if data is None and response.content:
                raise ValueError("an answer that is not JSON")
        etag = response.headers.get("etag")
        if conditional and etag:
            self._store(key, etag, data)
        return data

    def forget(self, keys: Iterable[str]) -> None:
        """Let go of the answers remembered under ``keys`` (``answer_key``)."""
        with self._lock:
            for key in keys:
                self._etags.pop(key, None)

    def close(self) -> None:
        with self._lock:
            sessions = list(self._sessions)
            self._sessions.clear()
        for session in sessions:
            session.close()

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # no ~/.netrc credentials, no proxy surprises
            self._local.session = session
            with self._lock:
                self._sessions.add(session)
        return session

    def _cached(self, key: str) -> tuple[str, Any] | None:
        with self._lock:
            entry = self._etags.get(key)
            if entry is not None:
                self._etags.move_to_end(key)
            return entry

    def _store(self, key: str, etag: str, data: Any) -> None:
        with self._lock:
            self._etags[key] = (etag, data)
            self._etags.move_to_end(key)
            while len(self._etags) > ETAG_ENTRIES:
                self._etags.popitem(last=False)


def answer_key(path: str, params: Mapping[str, str | int]) -> str:
    """Under which key the ETag cache keeps the answer to a GET of ``path``."""
    query = sorted((k, str(v)) for k, v in params.items())
    return path + "?" + "&".join(f"{k}={v}" for k, v in query)


def _json(response: requests.Response) -> Any:
    if not response.content:
        return None
    kind = response.headers.get("content-type", "")
    if "json" not in kind.lower():
        return None
    return response.json()
