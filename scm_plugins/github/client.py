"""GitHub REST calls through PyGithub's ``Requester``: every call counted, ETag reads.

PyGithub gives the transport (GHES base URLs and path prefixes, redirects kept on
the API host, no ``~/.netrc``, ``REQUESTS_CA_BUNDLE`` and proxies from the
environment); this module gives what a daemon needs on top:

* one ``Requester`` per worker thread: a ``Requester`` keeps one connection object
  whose ``request()`` and ``getresponse()`` are separate calls, so two threads
  sharing it can swap each other's requests;
* no retries and no pauses inside PyGithub (``retry=None``, no seconds between
  requests): the work queue owns backoff and honours ``Retry-After``;
* conditional GETs: the ETag of the last answer per URL, reused on 304, until the
  caller says it will not ask again (``forget``) or the bound pushes it out;
* every call counted and its rate-limit headers recorded (``ScmCalls``), and an
  answer of 300 or more raised as ``GitHubHTTPError`` for ``errors.translate``;
* every call made with the credential admitted by its budget first, at its cost
  (``limits.cost``: points, content creation, priority; a revalidation is free if 304);
* within a write's hold (a sharded replica's), each request's timeout cut to end
  before the hold does (``Receipt.deadline``), so that one still in flight when the
  hold lapses is given up on;
* PyGithub's debug records dropped, whatever its log level: they carry the
  request's headers and the answer's body (the answer that mints an App
  installation token holds the token);
* GraphQL where the instance serves it (``graphql_url``: github.com's beside its REST
  API, GitHub Enterprise Server's at ``<host>/api/graphql``, not under ``/api/v3``), and
  a GraphQL answer naming fields the instance's schema lacks (``undefinedField``: a GHES
  release without the feature) raised as ``ScmUnsupported``.
Concurrency: the ETag cache has its own lock; requesters are thread-local and live
as long as their thread.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from github.Requester import Requester

from promoter.errors import ScmUnsupported
from scm_plugins.budget import Priority
from scm_plugins.calls import ScmCalls
from scm_plugins.github.errors import GitHubHTTPError
from scm_plugins.github.limits import GRAPHQL_PATH, cost

TIMEOUT = 30
"""Seconds to wait for GitHub's answer."""

API_VERSION = "2022-11-28"
USER_AGENT = "promoter-github-scm"
ETAG_ENTRIES = 200_000
"""Answers remembered for conditional reads: every commit of 10,000 strategies' environments
twice (statuses, check runs), and their PR lookups; about 300 bytes each once slimmed."""
PER_PAGE = 100


class _NoBodies(logging.Filter):
    """Drops PyGithub's debug records: they hold request headers and response bodies."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO


logging.getLogger(Requester.__module__).addFilter(_NoBodies())


class GitHubClient:
    """Sends requests to one GitHub API base URL (github.com or GHES ``/api/v3``)."""

    def __init__(self, *, base_url: str, calls: ScmCalls) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.enterprise = parts.path.endswith("/api/v3")
        """GitHub Enterprise Server: REST at ``<host>/api/v3``, GraphQL beside it."""
        self.graphql_url = (
            f"{parts.scheme}://{parts.netloc}{parts.path.removesuffix('/v3')}/graphql"
            if self.enterprise
            else "/graphql"
        )
        """Where GraphQL is posted (a path under ``base_url``, or GHES's absolute URL)."""
        self._calls = calls
        self._local = threading.local()
        self._requesters: weakref.WeakSet[Requester] = weakref.WeakSet()
        """For ``close``; a finished thread's requester goes with the thread (pool threads
        are recycled), so this never grows past the threads alive."""
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
        keep: Callable[[Any], Any] | None = None,
        priority: Priority | None = None,
        budgeted: bool = True,
        url: str | None = None,
        **fields: object,
    ) -> Any:
        """One counted call; the parsed JSON answer (None for 204).

        With ``conditional``, a GET sends the ETag of the last answer for the same
        URL and reuses that answer on 304, which GitHub does not charge. ``keep``
        reduces the answer to what the caller reads (what is returned and what the
        ETag cache holds), so that tens of thousands of answers fit in memory.
        ``priority`` overrides the class the call's method gives it in the credential's
        budget; ``budgeted=False`` is for calls made with another credential (a GitHub
        App's own JWT). ``url``: where to send it when not to ``path`` under the API's
        base URL (GraphQL: ``graphql_url``).
        """
        query = sorted((k, str(v)) for k, v in (params or {}).items())
        # PyGithub prefixes a path with the base URL's path (GHES: /api/v3)
        url = url or path
        cache_key = answer_key(path, params)
        headers = {
            "Authorization": authorization,
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
        }
        cached = self._cached(cache_key) if conditional else None
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        spent = None
        if budgeted:
            revalidation = cached is not None
            text = str((body or {}).get("query", "")) if path == GRAPHQL_PATH else ""
            mutation = text.lstrip().startswith("mutation")
            spent = cost(
                operation,
                method,
                path,
                revalidation=revalidation,
                priority=priority,
                mutation=mutation,
            )
        with self._calls.call(operation, spent, **fields) as receipt:
            requester = self._requester()
            _timeout(requester, receipt.deadline(TIMEOUT))
            status, answer_headers, output = requester.requestJson(
                method, url, parameters=dict(query), headers=headers, input=body
            )
            receipt.answered(status, answer_headers)
            if status == 304 and cached is not None:
                return cached[1]
            data = _json(output)
            if status >= 300:
                raise GitHubHTTPError(status, data, answer_headers)
            if path in (GRAPHQL_PATH, self.graphql_url):
                self._lacking(data)
            if keep is not None:
                data = keep(data)
        etag = answer_headers.get("etag")
        if conditional and etag:
            self._store(cache_key, etag, data)
        return data

    def _lacking(self, data: Any) -> None:
        """``ScmUnsupported`` for a GraphQL answer naming fields the schema does not have."""
        errors = data.get("errors") if isinstance(data, dict) else None
        missing = [
            str(e.get("message") or e.get("extensions", {}).get("fieldName") or "")
            for e in errors or []
            if isinstance(e, dict) and (e.get("extensions") or {}).get("code") == "undefinedField"
        ]
        if missing:
            instance = "this GitHub Enterprise" if self.enterprise else "this GitHub"
            raise ScmUnsupported("; ".join(missing)[:300], instance=instance)

    def close(self) -> None:
        with self._lock:
            requesters = list(self._requesters)
            self._requesters.clear()
        for requester in requesters:
            requester.close()

    def _requester(self) -> Requester:
        requester: Requester | None = getattr(self._local, "requester", None)
        if requester is None:
            requester = Requester(
                auth=None,
                base_url=self.base_url,
                timeout=TIMEOUT,
                user_agent=USER_AGENT,
                per_page=PER_PAGE,
                verify=True,
                retry=None,
                pool_size=None,
                seconds_between_requests=None,
                seconds_between_writes=None,
            )
            self._local.requester = requester
            with self._lock:
                self._requesters.add(requester)
        return requester

    def _cached(self, url: str) -> tuple[str, Any] | None:
        with self._lock:
            entry = self._etags.get(url)
            if entry is not None:
                self._etags.move_to_end(url)
            return entry

    def forget(self, keys: Iterable[str]) -> None:
        """Let go of the answers remembered under ``keys`` (``answer_key``): the caller
        will not ask for them again (about a commit no strategy tracks any more)."""
        with self._lock:
            for key in keys:
                self._etags.pop(key, None)

    def _store(self, url: str, etag: str, data: Any) -> None:
        with self._lock:
            self._etags[url] = (etag, data)
            self._etags.move_to_end(url)
            while len(self._etags) > ETAG_ENTRIES:
                self._etags.popitem(last=False)


def _timeout(requester: Requester, seconds: float) -> None:
    """Give the next request of ``requester`` (this thread's) a timeout of ``seconds``, to
    connect and to read: PyGithub reads it from its kept connection at each request."""
    setattr(requester, "_Requester__timeout", seconds)  # noqa: B010  a name-mangled field
    connection = getattr(requester, "_Requester__connection", None)
    if connection is not None:
        connection.timeout = seconds


def answer_key(path: str, params: Mapping[str, str | int] | None = None) -> str:
    """Under which key the ETag cache keeps the answer to a GET of ``path`` with ``params``."""
    query = sorted((k, str(v)) for k, v in (params or {}).items())
    return path + "?" + "&".join(f"{k}={v}" for k, v in query)


def _json(output: str) -> Any:
    if not output:
        return None
    try:
        return json.loads(output)
    except ValueError:
        return {"message": output[:200]}
