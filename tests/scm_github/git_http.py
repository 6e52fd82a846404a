"""A loopback git smart-HTTP server (``git http-backend``) that demands a Basic auth header.

It stands in for github.com's git endpoint in credential tests: a request whose
``Authorization`` is not one of ``accepted`` gets 401, like GitHub's. ``delay`` adds
that many seconds to every request (a network round trip), and ``requests`` records
each one's (start, end, method, path) for the benchmarks.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def _serve(self) -> None:
        started = time.perf_counter()
        if self.server.delay:
            time.sleep(self.server.delay)
        try:
            self._answer()
        finally:
            self.server.requests.append(
                (started, time.perf_counter(), self.command, self.path.split("?")[0])
            )

    def _answer(self) -> None:
        auth = self.headers.get("Authorization", "")
        self.server.seen.append((self.path, auth))
        if auth not in self.server.accepted:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(length),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, capture_output=True, env=env, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    root: Path
    accepted: set[str]
    seen: list[tuple[str, str]]
    delay: float
    requests: list[tuple[float, float, str, str]]


@contextmanager
def git_http_server(root: Path, *, accepted: set[str], delay: float = 0.0) -> Iterator[_Server]:
    """Serve the bare repositories under ``root`` at ``http://127.0.0.1:<port>/``."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.root, server.accepted, server.seen = root, accepted, []
    server.delay, server.requests = delay, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
