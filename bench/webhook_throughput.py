"""Webhook receiver throughput: signed genuine GitHub deliveries against the real receiver.

Three servers, each under uvicorn on 127.0.0.1 in a child process on the same server
stack (the one ``promoter serve`` runs, uvicorn's ``auto``: httptools, a dependency of
the project, and uvloop when it is installed; ``--http h11 --loop asyncio`` for the
pure Python stack):

* **receiver**: the project's receivers as the daemon mounts them;
* **minimal**: the yardstick, a plain starlette receiver written in this file as a
  reader would write it, doing only what a correct receiver must: verify the HMAC,
  decode the JSON, de-duplicate in memory, append the delivery id to a journal (one
  append per turn of the event loop) before answering 202;
* **bare**: a starlette route that reads the body and answers 202 (a floor, not a target).

This process drives them with keep-alive connections posting signed genuine ``push``
and ``status`` payloads, each with a delivery id of its own (a UUID, as GitHub's are: the
receiver's delivery log stores them in SQLite, where random keys cost more than a
counter's), at each connection count in turn, in rounds whose order turns. Prints one
JSON line and a readable summary; exits 1 when a target is missed.

    python bench/webhook_throughput.py [--duration 6] [--connections 1 --connections 8 ...]
    python bench/webhook_throughput.py --apps-alone [--rounds 3]   # the apps, no server

Targets (issue #33, target 3; 2-core machine shared with the load generator): at 1, 8
and 32 connections the receiver's rate >= the minimal receiver's and its server CPU per
request <= the minimal receiver's; at 8 connections its p99 < 5 ms and its rate >= 2,000
accepted requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import common

from promoter.http import free_port

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "github" / "webhooks" / "api.github.com"
SECRET = "bench-webhook-secret"
SECRET_ENV = "PROMOTER_BENCH_WEBHOOK_SECRET"
PAYLOADS = [("push", "push/with-new-branch.payload.json"), ("status", "status/payload.json")]
TARGETS = {"min_ratio": 1.0, "max_cpu_ratio": 1.0, "min_rps": 2000.0, "max_p99_ms": 5.0}
TARGET_CONNECTIONS = 8
"""The connection count the targets are checked at (the last one run when it is not run)."""
CONNECTIONS = [1, 8, 32]


# --- the servers (child processes) ----------------------------------------------------


def _receiver_app(state_dir: str) -> Any:
    """The receivers as the daemon mounts them (``promoter.http.app.build_app``): a POST to
    a webhook path goes straight to its receiver, in a process tuned as the daemon's
    (``promoter.tuning``: its garbage collector among other things)."""
    from promoter import tuning
    from promoter.config import Config
    from promoter.http import DirectPostApp
    from promoter.state.statuses import StatusCache
    from promoter.state.tracking import ShaIndex
    from webhooks import build_routes

    config = Config.model_validate(
        {
            "scmProviders": [{"name": "gh", "github": {"token": {"fromEnv": SECRET_ENV}}}],
            "repositories": [
                {
                    "name": "hello",
                    "url": "https://github.com/Codertocat/Hello-World.git",
                    "scmProvider": "gh",
                }
            ],
            "promotionStrategies": [
                {
                    "name": "hello-app",
                    "repository": "hello",
                    "dryBranch": "master",
                    "environments": [{"branch": "environment/dev"}],
                }
            ],
            "webhooks": {"github": {"secrets": [{"fromEnv": SECRET_ENV}]}},
        }
    )
    tuning.tune()  # the process, as the daemon sets it when it starts
    queued: set[str] = set()
    routes = build_routes(
        config=config,
        enqueue=queued.update,
        status_cache=StatusCache(),
        sha_index=ShaIndex(),
        state_dir=Path(state_dir),
    )
    return DirectPostApp(routes=routes)


def _minimal_app(state_dir: str) -> Any:
    """The yardstick: a plain starlette receiver that does the least a correct one must
    (verify the signature, decode the JSON, de-duplicate in memory, record the delivery
    id durably before answering: one journal append per turn of the event loop), written
    as a reader would write it, and nothing more (no routing to strategies, no metrics,
    no logs)."""
    import hashlib
    import hmac

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    secret = SECRET.encode()
    seen: set[str] = set()
    journal = os.open(Path(state_dir) / "minimal.journal", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    unwritten: list[bytes] = []
    waiting: list[asyncio.Future[None]] = []

    def append() -> None:  # once per turn of the loop, for every request of that turn
        os.write(journal, b"".join(unwritten))
        unwritten.clear()
        for future in waiting:
            future.set_result(None)
        waiting.clear()

    async def webhook(request: Request) -> Response:
        body = await request.body()
        signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(signature, request.headers.get("x-hub-signature-256", "")):
            return Response(b'{"result":"unauthorized"}', 401, media_type="application/json")
        try:
            json.loads(body)
        except ValueError:
            return Response(b'{"result":"invalid"}', 400, media_type="application/json")
        delivery = request.headers.get("x-github-delivery", "")
        if delivery in seen:
            return Response(b'{"result":"duplicate"}', 202, media_type="application/json")
        seen.add(delivery)
        loop = asyncio.get_running_loop()
        if not waiting:
            loop.call_soon(append)
        unwritten.append(delivery.encode() + b"\n")
        done = loop.create_future()
        waiting.append(done)
        await done
        return Response(b'{"result":"accepted"}', 202, media_type="application/json")

    return Starlette(routes=[Route("/webhooks/github", webhook, methods=["POST"])])


def _bare_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def endpoint(request: Request) -> Response:
        await request.body()
        return Response(b'{"result":"accepted"}', 202, media_type="application/json")

    return Starlette(routes=[Route("/webhooks/github", endpoint, methods=["POST"])])


def serve(args: argparse.Namespace) -> None:
    import uvicorn

    from promoter import logs

    logs.setup(args.log_level)  # as the daemon does: JSON lines on stderr
    apps = {
        "receiver": lambda: _receiver_app(args.state_dir),
        "minimal": lambda: _minimal_app(args.state_dir),
        "bare": _bare_app,
    }
    app = apps[args.target]()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        http=args.http,
        loop=args.loop,
        lifespan="off",
        access_log=False,
        log_config=None,
        log_level=args.log_level,
    )
    server = uvicorn.Server(config)
    if not args.profile:
        server.run()
        return
    import cProfile

    # uvicorn re-raises SIGTERM after its graceful shutdown: make that an exit we can see
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    profiler = cProfile.Profile()
    try:
        profiler.runcall(server.run)
    finally:
        profiler.dump_stats(str(Path(args.profile) / f"{args.target}.pstats"))


def _scope(event: str, body: bytes, signature: str) -> dict[str, Any]:
    """The ASGI scope uvicorn would give the app for one delivery (a fresh delivery id)."""
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"x-github-event", event.encode()),
        (b"x-hub-signature-256", signature.encode()),
        (b"user-agent", b"GitHub-Hookshot/bench"),
        (b"x-github-delivery", str(uuid.uuid4()).encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    return {
        "type": "http",
        "method": "POST",
        "path": "/webhooks/github",
        "root_path": "",
        "headers": headers,
        "query_string": b"",
        "http_version": "1.1",
        "scheme": "http",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }


def app_alone(args: argparse.Namespace) -> None:
    """One target's app called in this process, one delivery after another, with no
    server: prints its microseconds a delivery (the app's own CPU, none of the stack's)."""
    from webhooks.verify import GitHubSignature

    os.environ[SECRET_ENV] = SECRET
    signed = []
    for event, name in PAYLOADS:
        body = (FIXTURES / name).read_bytes()
        signed.append((event, body, GitHubSignature.sign(SECRET, body)))
    app = {"receiver": _receiver_app, "minimal": _minimal_app}[args.target](args.state_dir)

    async def send(message: dict[str, Any]) -> None:
        return None

    async def drive(count: int) -> float:
        started = time.perf_counter()
        for n in range(count):
            event, body, signature = signed[n % len(signed)]
            messages = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive(messages: list[dict[str, Any]] = messages) -> dict[str, Any]:
                return messages.pop() if messages else {"type": "http.disconnect"}

            await app(_scope(event, body, signature), receive, send)
        return (time.perf_counter() - started) / count * 1e6

    async def run() -> None:
        await drive(500)  # warm
        us = round(await drive(args.count), 1)
        print(json.dumps({"target": args.target, "us_per_request": us}))

    asyncio.run(run())


def apps_alone(args: argparse.Namespace) -> dict[str, list[float]]:
    """Each target's app alone (``app_alone``), in a process and a state directory of its
    own (a delivery log that starts empty, as the servers' do), in turns."""
    found: dict[str, list[float]] = {"minimal": [], "receiver": []}
    for _ in range(args.rounds):
        for target in found:
            with tempfile.TemporaryDirectory(prefix="webhook-bench-") as state_dir:
                out = subprocess.run(
                    [sys.executable, __file__, "app", target, "--state-dir", state_dir],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                ).stdout
            found[target].append(json.loads(out.splitlines()[-1])["us_per_request"])
    return found


# --- the load generator (this process) ------------------------------------------------


def _templates() -> list[tuple[bytes, bytes]]:
    """(head up to the delivery id, rest of the request) per payload, signed."""
    sys.path.insert(0, str(ROOT))
    from webhooks.verify import GitHubSignature

    out = []
    for event, name in PAYLOADS:
        body = (FIXTURES / name).read_bytes()
        head = (
            f"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nX-GitHub-Event: {event}\r\n"
            f"X-Hub-Signature-256: {GitHubSignature.sign(SECRET, body)}\r\n"
            f"User-Agent: GitHub-Hookshot/bench\r\nX-GitHub-Delivery: "
        ).encode()
        rest = f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        out.append((head, rest))
    return out


def split_answer(buffer: bytes) -> tuple[bytes, bytes] | None:
    """The first whole HTTP answer in ``buffer`` (by its Content-Length) and what follows
    it, or None while it is not all there."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = 0
    for line in buffer[:end].split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if len(buffer) < end + 4 + length:
        return None
    return buffer[: end + 4 + length], buffer[end + 4 + length :]


class _Client(asyncio.Protocol):
    """One keep-alive connection: sends a request, waits for the whole answer, sends the next.

    A bare protocol rather than asyncio streams, so that the load generator spends as
    little CPU as possible on a machine it shares with the server.
    """

    def __init__(self, stop_at: float, measure_from: float, out: dict[str, Any]) -> None:
        self.stop_at, self.measure_from, self.out = stop_at, measure_from, out
        self.templates = _templates()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.buffer = b""
        self.sent = 0
        self.started = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter()
        if self.started >= self.stop_at:
            self.transport.close()
            return
        head, rest = self.templates[self.sent % len(self.templates)]
        self.sent += 1
        self.transport.write(head + str(uuid.uuid4()).encode() + rest)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        split = split_answer(self.buffer)
        if split is None:
            return
        done = time.perf_counter()
        answer, self.buffer = split
        out = self.out
        out["sent"] += 1
        if self.started >= self.measure_from:
            out["latencies"].append(done - self.started)
            if answer[9:12] == b"202" and answer.endswith(b'"accepted"}'):
                out["accepted"] += 1
            else:
                out["other"] += 1
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _load(port: int, connections: int, warmup: float, duration: float) -> dict[str, Any]:
    """One round against one server: raw counts and latencies of the measured part."""
    out: dict[str, Any] = {"latencies": [], "accepted": 0, "other": 0, "sent": 0}
    loop = asyncio.get_running_loop()
    now = time.perf_counter()
    measure_from, stop_at = now + warmup, now + warmup + duration
    clients = []
    for _ in range(connections):
        _, client = await loop.create_connection(
            lambda: _Client(stop_at, measure_from, out), "127.0.0.1", port
        )
        clients.append(client)
    await asyncio.wait_for(asyncio.gather(*(c.done for c in clients)), warmup + duration + 30)
    return out


def _summary(rounds: list[dict[str, Any]], duration: float) -> dict[str, Any]:
    latencies = sorted(x for r in rounds for x in r["latencies"])
    accepted = sum(r["accepted"] for r in rounds)
    sent = sum(r["sent"] for r in rounds)
    cpu = sum(r["cpu"] for r in rounds)
    client_cpu = sum(r["client_cpu"] for r in rounds)
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "requests": len(latencies),
        "accepted": accepted,
        "not_accepted": sum(r["other"] for r in rounds),
        "rps": round(accepted / duration, 1),
        "p50_ms": round(quantiles[49] * 1000, 3),
        "p99_ms": round(quantiles[98] * 1000, 3),
        "max_ms": round(latencies[-1] * 1000, 3) if latencies else 0.0,
        "server_cpu_us_per_request": round(cpu / sent * 1e6, 1) if sent else 0.0,
        "client_cpu_us_per_request": round(client_cpu / sent * 1e6, 1) if sent else 0.0,
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stack(http: str, loop: str) -> tuple[str, str]:
    """What uvicorn's ``auto`` resolves to here: (HTTP parser, event loop)."""
    import importlib.util

    def have(module: str) -> bool:
        return importlib.util.find_spec(module) is not None

    if http == "auto":
        http = "httptools" if have("httptools") else "h11"
    if loop == "auto":
        loop = "uvloop" if have("uvloop") else "asyncio"
    return http, loop


class Server:
    """One target under uvicorn in a child process, on a free loopback port."""

    def __init__(self, target: str, args: argparse.Namespace, state_dir: str) -> None:
        self.target = target
        self.port = free_port()
        env = {**os.environ, SECRET_ENV: SECRET, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, __file__, "serve", target, "--port", str(self.port)]
        command += ["--state-dir", state_dir, "--log-level", args.log_level]
        command += ["--http", args.http, "--loop", args.loop]
        if args.profile:
            command += ["--profile", args.profile]
        self.proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL, cwd=ROOT)

    def wait_listening(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.target} server exited with {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.target} server did not start listening")

    def round(self, args: argparse.Namespace, connections: int, seconds: float) -> dict[str, Any]:
        cpu_before, own_before = _cpu_seconds(self.proc.pid), time.process_time()
        out = asyncio.run(_load(self.port, connections, args.warmup, seconds))
        out["cpu"] = _cpu_seconds(self.proc.pid) - cpu_before
        out["client_cpu"] = time.process_time() - own_before
        return out

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


TARGET_NAMES = ("minimal", "receiver", "bare")


def measure(args: argparse.Namespace, state_dir: str) -> list[dict[str, Any]]:
    """Every target at each connection count, in rounds whose order turns, so that a
    change in the machine's load hits all of them."""
    servers = [Server(name, args, state_dir) for name in TARGET_NAMES]
    runs = []
    try:
        for server in servers:
            server.wait_listening()
        for connections in args.connections:
            rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in TARGET_NAMES}
            for n in range(args.rounds):
                for server in servers[n % 3 :] + servers[: n % 3]:
                    seconds = args.duration / args.rounds
                    rounds[server.target].append(server.round(args, connections, seconds))
            found = {name: _summary(rounds[name], args.duration) for name in TARGET_NAMES}
            minimal, receiver, bare = (found[name] for name in TARGET_NAMES)
            runs.append(
                {
                    "connections": connections,
                    **found,
                    "ratio": _ratio(receiver["rps"], minimal["rps"]),
                    "cpu_ratio": _ratio(
                        receiver["server_cpu_us_per_request"],
                        minimal["server_cpu_us_per_request"],
                    ),
                    "ratio_to_bare": _ratio(receiver["rps"], bare["rps"]),
                }
            )
    finally:
        for server in servers:
            server.stop()
    return runs


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else 0.0


def judge(runs: list[dict[str, Any]]) -> dict[str, bool]:
    """The targets: at every connection count, the receiver's rate >= the minimal one's
    and its CPU per request <= the minimal one's; at 8, p99 and rate."""
    checks = {}
    for run in runs:
        n = run["connections"]
        checks[f"rate_{n}"] = run["ratio"] >= TARGETS["min_ratio"]
        checks[f"cpu_{n}"] = run["cpu_ratio"] <= TARGETS["max_cpu_ratio"]
    checked = next((r for r in runs if r["connections"] == TARGET_CONNECTIONS), runs[-1])
    checks["rps"] = checked["receiver"]["rps"] >= TARGETS["min_rps"]
    checks["p99"] = checked["receiver"]["p99_ms"] < TARGETS["max_p99_ms"]
    return checks


def _line(name: str, figures: dict[str, Any]) -> str:
    return (
        f"  {name:<9}{figures['rps']:>8.0f} req/s  p50 {figures['p50_ms']:5.2f} ms"
        f"  p99 {figures['p99_ms']:6.2f} ms  server CPU"
        f" {figures['server_cpu_us_per_request']:4.0f} us/req"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    server = sub.add_parser("serve", help="(internal) run one target under uvicorn")
    server.add_argument("target", choices=["receiver", "minimal", "bare"])
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--state-dir", required=True)
    server.add_argument("--log-level", default="info")
    server.add_argument("--profile", default="")
    server.add_argument("--http", default="auto")
    server.add_argument("--loop", default="auto")
    alone = sub.add_parser("app", help="(internal) one target's app called with no server")
    alone.add_argument("target", choices=["receiver", "minimal"])
    alone.add_argument("--state-dir", required=True)
    alone.add_argument("--count", type=int, default=20000)
    parser.add_argument(
        "--apps-alone",
        action="store_true",
        help="only the receivers' apps, called in a process with no server: µs a delivery",
    )
    parser.add_argument(
        "--duration", type=float, default=6.0, help="seconds per target and connection count"
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per target")
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds before each round")
    parser.add_argument(
        "--connections",
        type=int,
        action="append",
        help=f"concurrent keep-alive connections, repeatable (default: {CONNECTIONS})",
    )
    parser.add_argument("--http", default="auto", choices=["auto", "h11", "httptools"])
    parser.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"])
    parser.add_argument("--log-level", default="info", help="the receiver's log level")
    parser.add_argument(
        "--profile", default="", help="directory for cProfile stats of both servers (slower)"
    )
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args)
        return 0
    if args.command == "app":
        app_alone(args)
        return 0
    if args.apps_alone:
        found = apps_alone(args)
        print(json.dumps({"bench": "webhook_throughput", "apps_alone_us": found}))
        for target, figures in found.items():
            print(f"{target}: {', '.join(f'{us:g}' for us in figures)} µs a delivery, no server")
        return 0
    args.connections = args.connections or CONNECTIONS

    with tempfile.TemporaryDirectory(prefix="webhook-bench-") as state_dir:
        runs = measure(args, state_dir)
    checks = judge(runs)
    checked = next((r for r in runs if r["connections"] == TARGET_CONNECTIONS), runs[-1])
    http, loop = stack(args.http, args.loop)
    report = {
        "bench": "webhook_throughput",
        "duration_s": args.duration,
        "rounds": args.rounds,
        "server": f"uvicorn {http} {loop}, 1 process each",
        "receiver_log_level": args.log_level,
        "connections": checked["connections"],
        "receiver": checked["receiver"],
        "minimal": checked["minimal"],
        "bare": checked["bare"],
        "ratio": checked["ratio"],
        "runs": runs,
        "load_average": round(os.getloadavg()[0], 2),
        "targets": {**TARGETS, "at_connections": checked["connections"]},
        "pass": checks,
    }
    print(json.dumps(report))
    print(f"\nuvicorn, {http} parser, {loop} loop; {args.duration:g} s per target and count")
    for run in runs:
        print(
            f"{run['connections']} connection(s): receiver / minimal = {run['ratio']:.2f} by rate,"
            f" {run['cpu_ratio']:.2f} by server CPU per request (receiver / bare"
            f" {run['ratio_to_bare']:.2f})"
        )
        for name in TARGET_NAMES:
            print(_line(name, run[name]))
            if run[name]["not_accepted"]:
                print(f"  ({run[name]['not_accepted']} not accepted)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("  ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in checks.items()))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
