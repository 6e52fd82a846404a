"""A delivery answered 202 is in the delivery log on disk: killing the process loses none."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from promoter.http import free_port
from tests.webhooks.helpers import GITHUB_SECRET, SECRET_ENV, github_fixture
from webhooks.deliveries.log import FILE_NAME, DeliveryLog
from webhooks.verify import GitHubSignature

ROOT = Path(__file__).resolve().parents[2]
SERVER = """
import sys, uvicorn
from pathlib import Path
from starlette.applications import Starlette
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.webhooks.helpers import make_config
from webhooks import build_routes

routes = build_routes(config=make_config(), enqueue=lambda keys: None,
                      status_cache=StatusCache(), sha_index=ShaIndex(), state_dir=Path(sys.argv[2]))
uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=int(sys.argv[1]),
            lifespan="off", log_config=None, access_log=False)
"""


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server did not start")


def _post(sock: socket.socket, delivery: str, body: bytes) -> bytes:
    sock.sendall(
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
        b"Content-Type: application/json\r\nX-GitHub-Delivery: " + delivery.encode() + b"\r\n"
        b"X-Hub-Signature-256: " + GitHubSignature.sign(GITHUB_SECRET, body).encode() + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    answer = b""
    while not answer.endswith(b"}"):
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        answer += chunk
    return answer


def test_every_delivery_answered_before_a_kill_is_a_duplicate_after_the_restart(
    tmp_path: Path,
) -> None:
    port, state = free_port(), tmp_path / "state"
    env = {**os.environ, **SECRET_ENV, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), str(state)],
        env=env,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    body = json.dumps(github_fixture("push/with-new-branch.payload.json")).encode()
    answered = []
    try:
        _wait_listening(port, proc)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(10)
            for n in range(20):
                answer = _post(sock, f"crash-{n}", body)
                assert answer.startswith(b"HTTP/1.1 202 "), answer
                answered.append(f"github:crash-{n}")
            proc.send_signal(signal.SIGKILL)  # no shutdown: nothing written after the answers
    finally:
        proc.kill()
        proc.wait(10)
    restarted = DeliveryLog(state / FILE_NAME)
    try:
        assert [d for d in answered if restarted.record(d)] == []
    finally:
        restarted.close()
