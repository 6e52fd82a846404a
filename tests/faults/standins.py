"""Servers on 127.0.0.1 that stand in for a gate's backend and misbehave on purpose.

A ``Standin`` answers through its ``answer`` function while its ``mode`` is ``ok``; in
another mode, the requests its ``faulty`` predicate picks are answered so:

- ``hang``: the request is read and never answered (until the mode changes or the
  server stops, when the connection is closed);
- ``slow``: its headers at once, then its body one byte every 50 ms, after 40 spaces
  (JSON allows them): two seconds at least, whatever the body; an answer that has no
  body (a 304 to a conditional read) is sent whole after those two seconds;
- ``5xx``: 503 with the words "upstream overloaded";
- ``garbage``: 200 with an HTML body, ``<html>oops</html>``;
- ``reset``: the connection is reset (TCP RST) instead of an answer.

A TLS error needs no mode: an ``https://`` URL to this plain-HTTP server fails the
handshake; missing credentials are a configuration matter (a secret that is not set).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, str, bytes]
"""(status, content type, body)."""
HeadedAnswer = tuple[int, str, bytes, dict[str, str]]
"""(status, content type, body, the answer's other headers: an ETag, rate limits)."""
Handler = Callable[[str, str, dict[str, str], bytes], Answer | HeadedAnswer]
"""(method, path with query, headers, body) -> the answer."""

MODES = ("ok", "hang", "slow", "5xx", "garbage", "reset")
BODILESS = (204, 304)
"""Answers without a body: "slow" sends them late instead of trickling one."""
SLOW_HEAD = 2.0
"""Seconds a "slow" answer without a body waits (what trickling 40 bytes takes)."""


class Standin:
    def __init__(self, answer: Handler, *, faulty: Callable[[str], bool] = lambda path: True):
        self.answer = answer
        self.faulty = faulty
        self.requests: list[tuple[str, str, float]] = []
        self._mode = "ok"
        self._released = threading.Event()
        self._lock = threading.Lock()
        standin = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                standin._serve(self)

            def do_POST(self) -> None:
                standin._serve(self)

            def do_PATCH(self) -> None:
                standin._serve(self)

            def do_PUT(self) -> None:
                standin._serve(self)

            def do_DELETE(self) -> None:
                standin._serve(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Standin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        """Misbehave so from now on; requests left hanging are let go (closed)."""
        assert mode in MODES, mode
        with self._lock:
            self._mode = mode
            released, self._released = self._released, threading.Event()
        released.set()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self._lock:
            mode = self._mode if self.faulty(handler.path) else "ok"
            released = self._released
            self.requests.append((handler.command, handler.path, time.monotonic()))
        if mode == "hang":
            released.wait()
            handler.close_connection = True
            return
        if mode == "reset":
            linger = struct.pack("ii", 1, 0)  # close() without shutdown() sends RST
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            handler.connection.close()
            handler.close_connection = True
            return
        extra: dict[str, str] = {}
        if mode == "5xx":
            status, kind, payload = 503, "text/plain", b"upstream overloaded"
        elif mode == "garbage":
            status, kind, payload = 200, "text/html", b"<html>oops</html>"
        else:
            headers = {k.lower(): v for k, v in handler.headers.items()}
            answer = self.answer(handler.command, handler.path, headers, body)
            status, kind, payload = answer[:3]
            extra = answer[3] if len(answer) == 4 else {}
        bodiless = status in BODILESS
        if mode == "slow" and bodiless:  # nothing to trickle: the answer itself comes late
            if not released.wait(SLOW_HEAD):
                self._answer_head(handler, status, kind, extra, None)
            handler.close_connection = True
            return
        if mode == "slow":
            payload = b" " * 40 + payload
        self._answer_head(handler, status, kind, extra, None if bodiless else payload)
        if mode != "slow":
            handler.wfile.write(payload)
            return
        for byte in payload:
            if released.wait(0.05):
                break
            try:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
            except OSError:
                break
        handler.close_connection = True

    @staticmethod
    def _answer_head(
        handler: BaseHTTPRequestHandler,
        status: int,
        kind: str,
        extra: dict[str, str],
        payload: bytes | None,
    ) -> None:
        """The status line and headers; no length for an answer without a body (a 304)."""
        handler.send_response(status)
        for name, value in extra.items():
            if name.lower() not in ("content-type", "content-length"):
                handler.send_header(name, value)
        handler.send_header("Content-Type", kind)
        if payload is not None:
            handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
