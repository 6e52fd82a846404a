"""Serving an app on 127.0.0.1 from a thread: for the demo, benchmarks and tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from promoter.http.serving import uvicorn_options


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ThreadServer:
    """uvicorn serving ``app`` on 127.0.0.1:``port`` in a daemon thread."""

    def __init__(
        self,
        app: Any,
        port: int,
        *,
        name: str = "promoter-uvicorn",
        server: Callable[[uvicorn.Config], uvicorn.Server] = uvicorn.Server,
    ) -> None:
        self.server = server(uvicorn.Config(app, **uvicorn_options(host="127.0.0.1", port=port)))
        self.thread = threading.Thread(target=self.server.run, name=name, daemon=True)

    def start(self, timeout: float = 30.0) -> ThreadServer:
        """Start and wait until it accepts connections; RuntimeError when it does not."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return self

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self, timeout: float = 60.0) -> None:
        """Ask uvicorn to shut down (the app's lifespan ends) and wait for it."""
        self.server.should_exit = True
        self.thread.join(timeout)
