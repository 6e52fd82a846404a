"""A small thread-safe GitHub REST client: one session, every call counted, ETag reads.

Why not PyGithub's ``Requester``: it shares one connection object between threads
(``request()`` then ``getresponse()``), retries and sleeps on rate limits by default,
and logs response bodies (installation tokens included) at debug level.
Concurrency: the session is shared by worker threads; the ETag cache has its own lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import requests

from scm_plugins.calls import ScmCalls
from scm_plugins.github.errors import GitHubHTTPError

TIMEOUT = (5.0, 30.0)
"""Connect and read timeouts, in seconds."""

API_VERSION = "2022-11-28"
USER_AGENT = "promoter-github-scm"
ETAG_ENTRIES = 4096


def _no_netrc(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """Session auth that keeps ~/.netrc from replacing our Authorization header."""
    return request


class GitHubClient:
    """Sends requests to one GitHub API base URL (github.com or GHES ``/api/v3``)."""

    def __init__(self, *, base_url: str, calls: ScmCalls) -> None:
        self.base_url = base_url.rstrip("/")
        self._calls = calls
        self._session = requests.Session()
        self._session.auth = _no_netrc
        self._session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "User-Agent": USER_AGENT,
                "X-GitHub-Api-Version": API_VERSION,
            }
        )
        self._etags: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def request(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        authorization: str,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        conditional: bool = False,
        **fields: object,
    ) -> Any:
        """One counted call; the parsed JSON answer (None for 204).

        With ``conditional``, a GET sends the ETag of the last answer for the same
        URL and reuses that answer on 304, which GitHub does not charge.
        """
        url = self.base_url + path
        if params:
            url += "?" + urlencode(sorted((k, str(v)) for k, v in params.items()))
        headers = {"Authorization": authorization}
        cached = self._cached(url) if conditional else None
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        with self._calls.call(operation, **fields):
            response = self._session.request(
                method, url, headers=headers, json=body, timeout=TIMEOUT
            )
            self._calls.record_rate_limit(response.headers)
            if response.status_code == 304 and cached is not None:
                return cached[1]
            data = _json(response)
            if response.status_code >= 300:
                raise GitHubHTTPError(response.status_code, data, response.headers)
        etag = response.headers.get("ETag")
        if conditional and etag:
            self._store(url, etag, data)
        return data

    def close(self) -> None:
        self._session.close()

    def _cached(self, url: str) -> tuple[str, Any] | None:
        with self._lock:
            entry = self._etags.get(url)
            if entry is not None:
                self._etags.move_to_end(url)
            return entry

    def _store(self, url: str, etag: str, data: Any) -> None:
        with self._lock:
            self._etags[url] = (etag, data)
            self._etags.move_to_end(url)
            while len(self._etags) > ETAG_ENTRIES:
                self._etags.popitem(last=False)


def _json(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return {"message": response.text[:200]}
