"""Under a real uvicorn on loopback: a huge body is refused at once and the connection closed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette

from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.webhooks.helpers import GITHUB_SECRET, github_fixture, make_config
from webhooks import build_routes
from webhooks.verify import GitHubSignature


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    routes = build_routes(
        config=make_config(maxBodyBytes=64 * 1024),
        enqueue=lambda keys: None,
        status_cache=StatusCache(),
        sha_index=ShaIndex(),
        state_dir=tmp_path,
    )
    config = uvicorn.Config(
        Starlette(routes=routes),
        host="127.0.0.1",
        port=0,
        http="h11",
        loop="asyncio",
        lifespan="off",
        access_log=False,
        log_config=None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        routes.close()


def _answer(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data  # the server closed the connection
        data += chunk


def test_a_declared_huge_body_is_refused_before_it_is_sent(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
            b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{"
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b'{"result":"too_large"}' in answer


def test_a_chunked_huge_body_is_refused_once_past_the_cap(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
        for _ in range(5):  # 80 KiB, past the 64 KiB cap; the rest is never sent
            sock.sendall(chunk)
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_a_signed_delivery_is_accepted_over_a_kept_alive_connection(port: int) -> None:
    body = json.dumps(github_fixture("push/with-new-branch.payload.json")).encode()
    request = (
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
        b"Content-Type: application/json\r\nX-GitHub-Delivery: %s\r\n"
        b"X-Hub-Signature-256: " + GitHubSignature.sign(GITHUB_SECRET, body).encode() + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(5)
        for n in (b"k-1", b"k-2"):
            sock.sendall(request.replace(b"%s", n))
            answer = _one_response(sock)
            assert answer.startswith(b"HTTP/1.1 202 ")
            assert answer.endswith(b'{"result":"accepted"}')


def _one_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body
