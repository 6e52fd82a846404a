"""What both fake Bitbuckets share: a real HTTP server on 127.0.0.1, the request log, faults,
rate limits, and merges made with real git in the bare repository behind them.

A fake's ``answer(method, path, query, headers, body)`` returns ``(status, body, headers)``;
this base adds the log (``calls``), injected faults (``fail_next``), the product's rate
limit (``limit_for``: every request refused with 429 until then), and ``on_handled``,
called after a request changed the state and before its answer leaves.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

Answer = tuple[int, Any, dict[str, str]]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return done.stdout.strip()


def tip(repo: Path, branch: str) -> str | None:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}") or None
    except RuntimeError:
        return None


def has_commit(repo: Path, sha: str) -> bool:
    try:
        git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except RuntimeError:
        return False
    return True


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer], capture_output=True
    )
    return done.returncode == 0


def merged_tree(repo: Path, base: str, head: str) -> str | None:
    """The tree of a three-way merge of ``head`` into ``base``; None on a conflict."""
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-tree", "--write-tree", base, head],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return None
    return done.stdout.split()[0]


def merge(repo: Path, *, base_branch: str, head: str, how: str, message: str) -> str | None:
    """Merge ``head`` into ``base_branch`` (``merge``, ``squash``, ``ff``, ``ff-only``) with a
    compare-and-swap of the branch; the new tip, or None when it cannot (conflict, no ff)."""
    base = tip(repo, base_branch)
    assert base is not None
    forward = is_ancestor(repo, base, head)
    if how == "ff-only" and not forward:
        return None
    if how in ("ff", "ff-only") and forward:
        new = head
    else:
        tree = (
            git(repo, "rev-parse", f"{head}^{{tree}}") if forward else merged_tree(repo, base, head)
        )
        if tree is None:
            return None
        parents = ["-p", base] if how == "squash" else ["-p", base, "-p", head]
        new = git(repo, "commit-tree", tree, *parents, "-m", message or "Merged")
    git(repo, "update-ref", f"refs/heads/{base_branch}", new, base)
    return new


@dataclass
class Call:
    method: str
    path: str
    status: int
    at: float
    body: Any = None


@dataclass
class _Fault:
    method: str
    path: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    times: int


@dataclass
class FakeServer(ABC):
    """The HTTP half of a fake; subclasses give ``answer``."""

    calls: list[Call] = field(default_factory=list)
    on_handled: Callable[[str, str, int], None] | None = None
    on_push: Callable[[str, str, str, str], None] | None = None
    """Called as ``(full_name, branch, before, after)`` after a merge moved a branch: where
    Bitbucket sends its push webhook."""
    limited_until: float = 0.0

    def __post_init__(self) -> None:
        self.lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._limit_next: float | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, body, extra = fake.handle(self.command, self.path, headers, raw)
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def use_tls(self, certfile: Path, keyfile: Path) -> None:
        """Answer over TLS with this certificate (before ``start``)."""
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = self.url.replace("http://", "https://", 1)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail_next(
        self,
        method: str,
        path: str,
        status: int,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` requests of ``method`` whose path matches ``path`` fail."""
        self._faults.append(_Fault(method, re.compile(path), status, body, headers or {}, times))

    def limit_for(self, seconds: float) -> None:
        """The rate limit is spent: every request is refused with 429 for ``seconds``."""
        self.limited_until = time.monotonic() + seconds

    def limit_from_next(self, seconds: float) -> None:
        """The rate limit is spent at the next request: it and every request for ``seconds``
        after it are refused with 429 (a loaded machine cannot make the window pass first)."""
        self._limit_next = seconds

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        url = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = json.loads(raw) if raw.strip() else None
        with self.lock:
            answer = self._guarded(method, url.path, query, headers, body)
            self.calls.append(Call(method, url.path, answer[0], time.monotonic(), body))
        hook = self.on_handled
        if hook is not None:
            hook(method, url.path, answer[0])
        return answer

    def _guarded(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> Answer:
        if not self.authorized(headers.get("authorization", ""), path):
            return self.error(401, "Unauthorized: the credentials were refused")
        pending = self._limit_next
        if pending is not None:
            self._limit_next = None
            self.limited_until = time.monotonic() + pending
        if time.monotonic() < self.limited_until:
            return self.rate_limited()
        for i, fault in enumerate(self._faults):
            if fault.method == method and fault.path.search(path):
                fault.times -= 1
                if fault.times <= 0:
                    del self._faults[i]
                return (
                    fault.status,
                    fault.body or self.error(fault.status, "injected")[1],
                    fault.headers,
                )
        return self.answer(method, path, query, headers, body)

    # --- what a fake gives -------------------------------------------------------------

    @abstractmethod
    def authorized(self, authorization: str, path: str) -> bool:
        """Whether the product takes ``authorization`` for ``path``."""

    @abstractmethod
    def rate_limited(self) -> Answer:
        """The product's answer to a client over its rate limit."""

    @abstractmethod
    def error(self, status: int, message: str) -> Answer:
        """The product's error answer, in its own shape."""

    @abstractmethod
    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> Answer:
        """The product's answer to a request that passed authentication and the limits."""

    def count(self, method: str, pattern: str) -> list[Call]:
        """The logged requests of ``method`` whose path matches ``pattern``."""
        found = re.compile(pattern)
        return [c for c in list(self.calls) if c.method == method and found.search(c.path)]
