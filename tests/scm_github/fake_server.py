"""The GitHub fake served over real HTTP on 127.0.0.1, for a daemon in another process.

Every answer goes out with every header the fake gives it (the ETag, the rate-limit
headers, ``Retry-After``), so a client sees what it would see from GitHub: conditional
reads answered 304, its budget counted down. Connections are kept alive (HTTP/1.1), one
thread each. The fake's state lives in this process: a benchmark that measures the
daemon's memory runs the daemon in another one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

from requests.structures import CaseInsensitiveDict

from tests.scm_github.fake_github import FakeGitHub

API_PATH = "/api/v3"
"""Where the API is served (GitHub Enterprise Server's layout)."""


class FakeGitHubServer:
    """``make(api_url)`` builds the fake for the URL it is served at; ``api_url`` is
    what a GitHub provider's ``url`` is set to (plain HTTP: ``allowInsecure``)."""

    def __init__(self, make: Callable[[str], FakeGitHub], *, port: int = 0) -> None:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server._serve(self)

            do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.api_url = self.url + API_PATH
        self.fake = make(self.api_url)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-github", daemon=True
        )

    def __enter__(self) -> FakeGitHubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = SimpleNamespace(
            url=self.url + handler.path,
            method=handler.command,
            headers=CaseInsensitiveDict(dict(handler.headers.items())),
            body=body or None,
        )
        status, headers, text = self.fake._respond(request)
        payload = text.encode() if status != 304 else b""
        handler.send_response(status)
        for name, value in headers.items():
            if name.lower() != "content-length":
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
