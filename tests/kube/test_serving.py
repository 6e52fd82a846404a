"""How uvicorn serves the daemon, everywhere it does: a request's client is the peer that
opened the connection, whatever ``X-Forwarded-For`` or ``FORWARDED_ALLOW_IPS`` say, in
``promoter serve`` (tests/http/access/test_forwarded_serve.py), in a Kubernetes replica and
on the loopback server of the demo and the tests."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from promoter.http import ThreadServer, free_port, uvicorn_options
from promoter.kube import serving


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Where the request came from, as the app sees it."""
    request = Request(scope, receive)
    client = request.client.host if request.client else None
    await JSONResponse({"client": client, "scheme": request.url.scheme})(scope, receive, send)


def test_uvicorn_believes_no_forwarded_header_even_when_its_variable_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    server = ThreadServer(echo, free_port()).start()
    try:
        port = server.server.config.port
        forged = {"x-forwarded-for": "10.20.30.40", "x-forwarded-proto": "https"}
        answer = httpx.get(f"http://127.0.0.1:{port}/", headers=forged, timeout=30)
    finally:
        server.stop()
    assert answer.json() == {"client": "127.0.0.1", "scheme": "http"}


def test_the_options_turn_uvicorns_proxy_handling_off() -> None:
    options = uvicorn_options(host="0.0.0.0", port=8080)
    assert options["proxy_headers"] is False and options["forwarded_allow_ips"] == []
    config = uvicorn.Config(echo, **options)
    assert config.proxy_headers is False and config.forwarded_allow_ips == []


def test_a_kubernetes_replica_is_served_with_the_same_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[uvicorn.Config] = []

    def run(self: uvicorn.Server, sockets: Any = None) -> None:
        seen.append(self.config)

    monkeypatch.setattr(serving.ReplicaServer, "run", run)

    class Mode:
        def routes(self) -> None:
            return None

    class Controller:
        mode = Mode()

    assert serving.serve_replica(Controller(), host="0.0.0.0", port=8080) is False  # type: ignore[arg-type]
    (config,) = seen
    assert (config.proxy_headers, config.forwarded_allow_ips) == (False, [])
    assert (config.host, config.port) == ("0.0.0.0", 8080)
