"""A real HTTP receiver on 127.0.0.1 for the notification tests: it records each request
and answers from a script of status codes (then 200)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    answers: list[int] = field(default_factory=list)
    """Status codes to answer with, in order; 200 once they run out."""
    requests: list[Received] = field(default_factory=list)
    attempts: int = 0

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.attempts += 1
                code = receiver.answers.pop(0) if receiver.answers else 200
                if code < 300:
                    receiver.requests.append(Received(dict(self.headers.items()), body))
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
