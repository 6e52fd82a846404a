"""A stateful fake of Azure DevOps Services on 127.0.0.1: its REST API and its git, for real.

A real HTTP server (the plugin may run in another process): ``url`` is the organization
(``http://127.0.0.1:PORT/fabrikam``, what a provider's ``url`` is set to), repositories
are real bare git repositories served by ``git http-backend`` at ``{url}/{project}/_git/
{name}`` and their API at ``{url}/{project}/_apis/git/repositories/{name or id}``. Pull
requests (``fake_pulls``) and gates (``fake_gates``) live in memory; completions are real
commits. As Azure does: a PAT is basic auth with any user name (a wrong one is a 401, or a
203 sign-in page without ``X-TFS-FedAuthRedirect: Suppress``); a REST call without
``api-version`` is refused; refusals carry Azure's error shape; ``tstu(limit, window)``
throttles as Azure's TSTU limits do (every answer carries ``X-RateLimit-Limit``,
``-Remaining``, ``-Reset``; past the limit a 429 with ``Retry-After`` and
``X-RateLimit-Resource``); ``fail_next`` injects one-off answers. Every change Azure would
announce by a service hook (a push, a pull request created, updated or completed) is handed
to ``on_event`` as the delivery Azure would send (``fake_events``), after the answer left.
A person completes, abandons or votes with ``person_completes``, ``person_abandons``,
``vote``; ``require_reviewers`` and ``require_status`` add blocking branch policies.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from tests.scm_azure import fake_events, fake_gates, fake_git, fake_pulls, fake_routes
from tests.scm_azure.fake_limits import Tstu
from tests.scm_azure.fake_state import Answer, AzureError, Call, FakeRepo, Policy, not_found

ORGANIZATION = "fabrikam"
NO_VERSION = (
    'No api-version was supplied for the "{method}" request. The version must be supplied '
    'either as part of the Accept header (e.g. "application/json; api-version=1.0") or as a '
    "query parameter (e.g. '?api-version=1.0')."
)
GIT = re.compile(r"^/([^/]+)/_git/([^/]+?)(?:\.git)?(/.*)$")
CHALLENGE = {"WWW-Authenticate": 'Basic realm="https://dev.azure.com/"'}
SIGN_IN = b"<html><head><title>Azure DevOps Services | Sign In</title></head></html>"


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


class FakeAzure:
    def __init__(self, *, token: str, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.clock = clock
        self.calls: list[Call] = []
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        self.before: Callable[[str, str, Any], None] | None = None
        """Called as ``(method, path, body)`` before a REST call is answered (to race it)."""
        self.complete_later = False
        """Azure queues completions: a PATCH answers ``queued``, the next read finishes it."""
        self.subscription = str(uuid.uuid4())
        self._repos: dict[tuple[str, str], FakeRepo] = {}
        self._projects: dict[str, str] = {}
        self._faults: list[tuple[str, re.Pattern[str], Answer, list[int]]] = []
        self.limits = Tstu(None)
        self._pending: list[dict[str, Any]] = []
        self._ids = 100
        self._notifications = 0
        self._lock = threading.RLock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def _serve(self) -> None:
                body = self._body()
                headers = {k.lower(): v for k, v in self.headers.items()}
                answer, raw, kind = fake.handle(self.command, self.path, headers, body)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if kind:
                    self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                fake.flush()

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while size := int(self.rfile.readline().strip() or b"0", 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    self.rfile.readline()
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.root}/{ORGANIZATION}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAzure:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- set-up and what people do -----------------------------------------------------

    def add_repository(self, project: str, name: str, path: Path) -> FakeRepo:
        self._projects.setdefault(project, str(uuid.uuid4()))
        repo = self._repos[(project, name.lower())] = FakeRepo(project, name, path)
        return repo

    def repo(self, project: str, name: str) -> FakeRepo:
        return self._repos[(project, name.lower())]

    def repositories(self) -> list[FakeRepo]:
        return list(self._repos.values())

    def clone_url(self, repo: FakeRepo) -> str:
        return f"{self.url}/{quote(repo.project)}/_git/{quote(repo.name)}"

    def api_url(self, repo: FakeRepo) -> str:
        return f"{self.url}/{quote(repo.project)}/_apis/git/repositories/{repo.id}"

    def project_id(self, project: str) -> str:
        return self._projects[project]

    def repository_json(self, repo: FakeRepo) -> dict[str, Any]:
        return fake_events.repository(self, repo)

    def fail_next(
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str = "injected fault",
        type_key: str = "InjectedFaultException",
    ) -> None:
        answer = AzureError(status, message, type_key).answer()
        answer.headers.update(headers or {})
        self._faults.append((method, re.compile(path), answer, [times]))

    def tstu(self, limit: int, window: float = 300.0) -> None:
        """Throttle as Azure does: at most ``limit`` calls per sliding ``window`` seconds."""
        self.limits = Tstu(limit, window)

    def require_reviewers(self, repo: FakeRepo, count: int = 1) -> None:
        repo.policies.append(Policy("reviewers", count=count, id=len(repo.policies) + 1))

    def require_status(self, repo: FakeRepo, genre: str, name: str, *, reset: bool = True) -> None:
        repo.policies.append(
            Policy("status", genre=genre, name=name, reset=reset, id=len(repo.policies) + 1)
        )

    def failing_policies(self, repo: FakeRepo, number: int) -> list[Policy]:
        passed = ("approved", "notApplicable")
        return [p for p in repo.policies if fake_gates.evaluate(repo, number, p) not in passed]

    def vote(self, repo: FakeRepo, number: int, person: dict[str, Any], vote: int) -> None:
        """``person`` (``uniqueName``, ``displayName``, ``votedFor``...) votes on a pull request."""
        with self._lock:
            found = repo.reviewers.setdefault(number, [])
            found[:] = [r for r in found if r.get("uniqueName") != person["uniqueName"]]
            found.append(fake_events.reviewer(person, vote))
            self.emit(repo, "git.pullrequest.updated", fake_pulls.view(self, repo, number))
        self.flush()

    def person_completes(self, repo: FakeRepo, number: int, person: dict[str, str]) -> None:
        """A person presses "Complete" (their rights bypass the branch policies)."""
        with self._lock:
            fake_pulls.finish(self, repo, number, by=person)
        self.flush()

    def person_abandons(self, repo: FakeRepo, number: int) -> None:
        with self._lock:
            fake_pulls.update(self, repo, number, {"status": "abandoned"})
        self.flush()

    def announce_push(self, repo: FakeRepo, updates: list[tuple[str, str | None, str]]) -> None:
        """Someone pushed ``(branch, before, after)`` to the repository's bare directory, not
        through the fake: Azure's ``git.push`` as if they had."""
        with self._lock:
            self.pushed(repo, [(f"refs/heads/{b}", before, after) for b, before, after in updates])
        self.flush()

    def pulls(self, repo: FakeRepo) -> list[dict[str, Any]]:
        with self._lock:
            return [fake_pulls.view(self, repo, n) for n in sorted(repo.pulls)]

    # --- what the pull requests and events modules use ---------------------------------

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def emit(self, repo: FakeRepo, event_type: str, resource: dict[str, Any]) -> None:
        self._notifications += 1
        self._pending.append(
            fake_events.pull_request(self, event_type, resource, self._notifications)
        )

    def pushed(
        self, repo: FakeRepo, updates: list[tuple[str, str | None, str]], by: Any = None
    ) -> None:
        """``(ref, before, after)`` moved: the ``git.push`` delivery is pending."""
        self._notifications += 1
        self._pending.append(fake_events.push(self, repo, updates, self._notifications, by))

    def flush(self) -> None:
        """Hand the deliveries of what just happened to ``on_event``, outside the lock."""
        with self._lock:
            pending, self._pending = self._pending, []
        for payload in pending:
            if self.on_event is not None:
                self.on_event(payload)

    # --- dispatch -----------------------------------------------------------------------

    def handle(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> tuple[Answer, bytes, str]:
        url = urlsplit(target)
        path = unquote(url.path)
        query = dict(parse_qsl(url.query))
        if not path.startswith(f"/{ORGANIZATION}/"):
            return Answer(404), b"", ""
        path = path[len(ORGANIZATION) + 1 :]
        found = GIT.match(path)
        if found is not None:
            return self._git(found, method, url.query, headers, raw)
        if self.before is not None:
            self.before(method, path, _parsed(raw))
        with self._lock:
            answer = self._rest(method, path, query, headers, raw)
            sent = _parsed(raw)
            self.calls.append(
                Call(self.clock(), method, f"{path}?{url.query}", answer.status, sent)
            )
        if answer.status == 203:
            return answer, SIGN_IN, "text/html; charset=utf-8"
        data = b"" if answer.body is None else json.dumps(answer.body).encode()
        return answer, data, "application/json; charset=utf-8; api-version=7.1" if data else ""

    def _authorized(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if not auth.startswith("Basic "):
            return False
        try:
            decoded = base64.b64decode(auth[6:]).decode()
        except (ValueError, UnicodeDecodeError):
            return False
        return decoded.partition(":")[2] == self.token

    def _rest(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> Answer:
        if not self._authorized(headers):
            if headers.get("x-tfs-fedauthredirect", "").lower() != "suppress":
                return Answer(203)
            return Answer(401, None, CHALLENGE)
        limited = self.limits.take(self.clock())
        if limited.status == 429:
            return limited
        for i, (m, pattern, answer, left) in enumerate(self._faults):
            if m == method and pattern.search(path):
                left[0] -= 1
                if left[0] <= 0:
                    del self._faults[i]
                return Answer(answer.status, answer.body, {**limited.headers, **answer.headers})
        if "api-version" not in query:
            error = AzureError(
                400, NO_VERSION.format(method=method), "VssVersionNotSpecifiedException"
            )
            return error.answer()
        try:
            body = json.loads(raw) if raw else {}
            answer = fake_routes.route(self, method, path, query, headers, body)
        except AzureError as refused:
            answer = refused.answer()
        answer.headers.update(limited.headers)
        return answer

    def find(self, project: str, name: str) -> FakeRepo:
        """A repository by project and name or id, as the API path names it."""
        for repo in self._repos.values():
            if repo.project == project and name.lower() in (repo.name.lower(), repo.id):
                return repo
        raise not_found("repository")

    def _git(
        self, found: re.Match[str], method: str, query: str, headers: dict[str, str], raw: bytes
    ) -> tuple[Answer, bytes, str]:
        if not self._authorized(headers):
            return (
                Answer(401, None, {"WWW-Authenticate": 'Basic realm="https://dev.azure.com/"'}),
                b"",
                "",
            )
        try:
            repo = self.find(found.group(1), found.group(2))
        except AzureError:
            return Answer(404), b"", ""
        receiving = found.group(3).endswith("/git-receive-pack")
        with self._lock:
            before = fake_git.refs(repo.path) if receiving else {}
            status, out, payload = fake_git.http_backend(
                repo.path.parent,
                method=method,
                path_info=f"/{repo.path.name}{found.group(3)}",
                query=query,
                headers=headers,
                body=raw,
            )
            if receiving:  # a push through the fake: Azure's git.push follows
                after = fake_git.refs(repo.path)
                moved = [
                    (ref, before.get(ref), after.get(ref, fake_events.ZERO))
                    for ref in sorted(set(before) | set(after))
                    if before.get(ref) != after.get(ref)
                ]
                if moved:
                    self.pushed(repo, moved)
        kind = next((v for k, v in out if k.lower() == "content-type"), "")
        rest = {k: v for k, v in out if k.lower() not in ("content-type", "content-length")}
        return Answer(status, None, rest), payload, kind
