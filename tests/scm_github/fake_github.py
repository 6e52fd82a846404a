"""A stateful fake of GitHub's REST API for ``responses``, backed by real git repositories.

Pull requests, commit statuses, check runs and comments live in memory; merges are
real merge commits in a local bare repository (``fake_git``). Bodies are GitHub's
genuine examples (``genuine``) with the fields that matter filled in. It keeps
GitHub's rules the plugin relies on: one open PR per head/base (422), a merge whose
``sha`` is not the head is refused (409), conditional GETs answer 304 without
charging the rate limit, tokens are checked (401), and an App signs a JWT that is
verified with its public key. Each known token's primary and secondary rate limits are
enforced with GitHub's headers and answers (``fake_limits``; ``limits`` scales them).
Served at a GitHub Enterprise Server URL (``https://ghe.example/api/v3``), it answers as
GHES does: REST under ``/api/v3``, GraphQL at ``/api/graphql`` (``/api/v3/graphql`` is
404).
Faults are injected with ``fail_next`` and ``rate_limit_next``. Thread-safe: the
daemon's workers call it concurrently.

    with FakeGitHub(genuine) as fake:
        fake.add_repository("acme/deploy", bare_repo_path)
        ...  # anything using requests against fake.base_url now talks to the fake
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import responses

from .fake_limits import FakeLimits, RateLimits
from .fake_routes import Routes
from .fake_state import NOT_FOUND, Refused
from .genuine import Genuine

Answer = tuple[int, dict[str, str], Any]


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    times: int


@dataclass
class Call:
    """One request the fake answered (for assertions; the Authorization header included)."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    authorization: str
    body: Any
    at: float = field(default_factory=time.monotonic)
    """When it was answered (``time.monotonic``)."""
    arrived: float = field(default_factory=time.monotonic)
    """When it arrived, before any other request's answer that holds it up: the instant
    GitHub's rate limits count."""


@dataclass
class FakeApp:
    """A GitHub App as the fake knows it: its id, public key and one installation."""

    app_id: int
    public_key_pem: str
    installation_id: int = 4242
    token_ttl: float = 3600.0
    issued: list[str] = field(default_factory=list)


class _Unrecorded(responses.CallList):
    """A ``responses`` call log that keeps nothing."""

    def add(self, request: Any, response: Any) -> None:
        pass

    def add_call(self, call: Any) -> None:
        pass


class FakeGitHub(Routes):
    def __init__(
        self,
        genuine: Genuine,
        *,
        base_url: str = "https://api.github.com",
        html_url: str = "https://github.com",
        tokens: tuple[str, ...] = ("ghp_fake0000000000000000000000000000000000",),
        app: FakeApp | None = None,
        limits: FakeLimits | None = None,
        record: bool = True,
    ) -> None:
        """``record``: keep each call in ``calls`` (and ``responses`` its request and
        response). A benchmark that measures the daemon's memory in the same process
        turns it off: each call kept costs about 7 KB of objects of the instrument's own."""
        super().__init__(genuine, base_url=base_url.rstrip("/"), html_url=html_url.rstrip("/"))
        self.record = record
        self.tokens = set(tokens)
        self.app = app
        self.installation_tokens: dict[str, float] = {}
        self.rate_limits = RateLimits(limits or FakeLimits(), genuine)
        self.calls: list[Call] = []
        self._faults: list[Fault] = []
        self._lock = threading.RLock()
        self._mock: responses.RequestsMock | None = None
        self.on_request: Callable[[str, str], None] | None = None
        base = urlsplit(self.base_url)
        self.enterprise = base.path.endswith("/api/v3")
        """GitHub Enterprise Server's layout: GraphQL beside the REST API, not under it."""
        self.graphql_url = (
            f"{base.scheme}://{base.netloc}{base.path.removesuffix('/v3')}/graphql"
            if self.enterprise
            else f"{self.base_url}/graphql"
        )

    # --- life cycle -----------------------------------------------------------------

    def __enter__(self) -> FakeGitHub:
        self._mock = responses.RequestsMock(assert_all_requests_are_fired=False)
        self._mock.start()
        self.install(self._mock)
        if not self.record:  # responses logs each call twice: the mock's and the route's
            self._mock._calls = _Unrecorded()
            for route in self._mock.registered():
                route._calls = _Unrecorded()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._mock is not None
        self._mock.stop()
        self._mock.reset()
        self._mock = None

    def install(self, mock: responses.RequestsMock) -> None:
        """Answer every request under ``base_url`` through ``mock``."""
        base = urlsplit(self.base_url)
        default_port = {"https": 443, "http": 80}[base.scheme]
        origin = f"{base.scheme}://{base.hostname}"
        port = rf"(?::{base.port})" if base.port else rf"(?::{default_port})?"
        pattern = re.compile(re.escape(origin) + port + re.escape(base.path) + r"(/.*)?$")
        for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
            mock.add_callback(method, pattern, callback=self._respond)
        if self.enterprise:
            graphql = urlsplit(self.graphql_url).path
            endpoint = re.compile(re.escape(origin) + port + re.escape(graphql) + r"$")
            mock.add_callback("POST", endpoint, callback=self._respond)

    # --- faults and inspection ------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path: str,
        *,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests whose path matches ``path`` (a regex) so."""
        with self._lock:
            self._faults.append(
                Fault(method, re.compile(path), status, body, dict(headers or {}), times)
            )

    def rate_limit_next(self, method: str, path: str, *, retry_after: int = 1) -> None:
        """A secondary rate limit (GitHub's recorded 403 body, ``Retry-After``)."""
        _, headers, body = self.genuine.error(
            "SpecificExceptions.testAuthenticatedRateLimitExceeded"
        )
        headers = {"retry-after": str(retry_after), "content-type": headers["content-type"]}
        self.fail_next(method, path, status=403, body=body, headers=headers)

    def exhaust_rate_limit(self, method: str, path: str, *, reset_in: int = 1) -> None:
        """A primary rate limit: GitHub's recorded 403 with ``x-ratelimit-remaining: 0``."""
        _, _, body = self.genuine.error("SpecificExceptions.testRateLimitExceeded")
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(time.time()) + reset_in),
        }
        self.fail_next(method, path, status=403, body=body, headers=headers)

    def charged(self) -> int:
        """Requests that cost rate limit (everything but 304s)."""
        with self._lock:
            return sum(1 for c in self.calls if c.status != 304)

    # --- dispatch -------------------------------------------------------------------

    def _respond(self, request: Any) -> tuple[int, dict[str, str], str]:
        parts = urlsplit(request.url)
        path = self._api_path(parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        arrived = time.monotonic()
        auth = str(request.headers.get("Authorization", ""))
        body = self._parse(request.body)
        token = self._limited_token(auth)
        refused = self.rate_limits.enter(token, request.method, path) if token else None
        status = 0
        try:
            if self.on_request is not None:
                self.on_request(request.method, path)
            with self._lock:
                if refused is None:
                    status, headers, payload = self._answer(request.method, path, query, auth, body)
                else:
                    status, headers, payload = refused
                get = request.method == "GET" and status == 200
                etag = '"' + _digest(payload) + '"' if get else ""
                if etag and request.headers.get("If-None-Match") == etag:
                    status, payload = 304, None
                if self.record:
                    call = Call(request.method, path, query, status, auth, body, arrived=arrived)
                    self.calls.append(call)
        finally:
            charged = self.rate_limits.leave(token, status, path) if token else {}
        out = {"content-type": "application/json; charset=utf-8", **charged, **headers}
        if etag:
            out["etag"] = etag
        return status, out, "" if payload is None else _dumps(payload)

    def _api_path(self, path: str) -> str:
        """The route a request's path names: ``/graphql`` for GHES's ``/api/graphql``, and
        for GHES's ``/api/v3/graphql`` a path no route serves (GitHub answers 404)."""
        if self.enterprise and path == urlsplit(self.graphql_url).path:
            return "/graphql"
        api = path[len(urlsplit(self.base_url).path) :] or "/"
        return "/api/v3/graphql" if self.enterprise and api == "/graphql" else api

    def _limited_token(self, auth: str) -> str:
        """The token whose limits a request counts against ("" for none the fake issued)."""
        secret = auth.partition(" ")[2]
        known = secret in self.tokens or secret in self.installation_tokens
        return secret if known else ""

    def _answer(
        self, method: str, path: str, query: dict[str, str], auth: str, body: Any
    ) -> Answer:
        for fault in self._faults:
            if fault.method == method and fault.path.search(path) and fault.times > 0:
                fault.times -= 1
                return fault.status, dict(fault.headers), fault.body
        route = self.route(method, path)
        if route is None:
            return 404, {}, dict(NOT_FOUND)
        handler, args, kind = route
        refused = self._authenticate(kind, auth, args)
        if refused is not None:
            return refused
        try:
            return handler(*args, query=query, body=body)
        except Refused as error:
            return error.answer

    def _authenticate(self, kind: str, auth: str, args: tuple[str, ...]) -> Answer | None:
        scheme, _, secret = auth.partition(" ")
        if kind == "app":
            if scheme.lower() == "bearer" and self._jwt_valid(secret):
                return None
        elif scheme.lower() in ("token", "bearer") and (
            secret in self.tokens or self.installation_tokens.get(secret, 0.0) > time.time()
        ):
            return None
        status, _, body = self.genuine.error("SpecificExceptions.testBadCredentials")
        return status, {}, body

    def _jwt_valid(self, token: str) -> bool:
        if self.app is None:
            return False
        try:
            claims = jwt.decode(token, self.app.public_key_pem, algorithms=["RS256"])
        except jwt.PyJWTError:
            return False
        return str(claims.get("iss")) == str(self.app.app_id)

    @staticmethod
    def _parse(raw: Any) -> Any:
        if not raw:
            return None
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw)

    # --- App endpoints ----------------------------------------------------------------

    def issue_installation_token(self) -> tuple[str, float]:
        assert self.app is not None
        token = f"ghs_fake{len(self.app.issued):032d}"
        expires = time.time() + self.app.token_ttl
        self.app.issued.append(token)
        self.installation_tokens[token] = expires
        return token, expires

    def add_repository(self, full_name: str, git_dir: Path) -> None:
        """Serve ``full_name`` (owner/name) from the bare repository at ``git_dir``."""
        with self._lock:
            self.repositories[full_name.lower()] = self.new_repository(full_name, git_dir)


def _dumps(payload: Any) -> str:
    return json.dumps(payload)


def _digest(payload: Any) -> str:
    return hashlib.sha1(_dumps(payload).encode()).hexdigest()
