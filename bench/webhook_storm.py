"""A webhook storm: 1,000 strategies, 10,000 signed GitHub deliveries in 10 seconds.

A child process runs the daemon as ``promoter serve`` does (uvicorn on 127.0.0.1, its
lifespan starting the workers) on the GitHub plugin, against the stateful GitHub fake
(``tests/scm_github/fake_github.py``) served over HTTP on 127.0.0.1 by another child
process (``tests/scm_github/fake_server.py``: ETags, 304s and rate-limit headers as
GitHub's), which also holds the repositories. Every strategy has a new change proposed
for its first environment (4 environments each, over 10 repositories); the cold start
opens its PR, blocked on the ``ci`` gate. Then CI reports ``ci`` green on every proposed
commit on GitHub, and this process plays GitHub's webhooks: over 32 keep-alive
connections, paced evenly over 10 seconds,

* the 1,000 ``status`` deliveries that matter (``ci`` success on each proposed commit),
* each of them delivered a second time (GitHub's redelivery: the same delivery id),
* 8,000 other ``status`` deliveries on the same commits (``lint`` and ``security``,
  pending then success: gates no strategy waits on, which still wake it),

in a shuffled order. It waits until every change is merged (each strategy's first
environment runs the change, as the daemon sees it), then for the daemon to fall idle,
and compares the daemon's resident memory (``/proc``) before and after, each read once
the daemon has rested ``REST`` seconds (it gives freed memory back to the system a
second or two after its last reconcile, ``promoter.daemon.memory.trim``): the daemon's
alone, GitHub's state and the
work of answering it being in the other process (until 2026-11-27 the fake ran in the
daemon's process through ``responses``, its state and its garbage counted with the daemon's).

    python bench/webhook_storm.py [--strategies 1000] [--deliveries 10000] [--seconds 10]
        [--storms 1]

``--storms N`` sends N storms in a row on the same daemon, each on the next change: the
hydrator pushes it to every strategy's first environment, the daemon opens its pull
requests, then the same storm for the new commits; the RSS before and after each is
printed (the targets judge the first).

Targets (issue #33, target 4): every delivery answered 202 (accepted or duplicate) and
the storm sent in its 10 seconds (10 % slack: the daemon answers fast enough to keep the
pace), every change merged, no strategy in error, RSS after the storm within 5 % of its
level before it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import common
import resync_scale as scale
from webhook_throughput import split_answer

TARGETS = {"rss_growth": 0.05}
REPOS = 10
OTHER_KEYS = ("lint", "security")


# --- the daemon (child process) -------------------------------------------------------


def serve_github(args: argparse.Namespace) -> None:
    """GitHub's side, in a process of its own: build the fleet (its repositories), serve
    the stateful fake over HTTP on 127.0.0.1 with every environment's ``health`` green,
    write the fleet for the daemon's process, then obey commands on stdin: ``ci`` (CI
    reports green on every proposed commit), ``advance`` (the hydrator pushes the next
    change for every strategy's first environment), ``stop``."""
    from tests.scm_github.fake_github import FakeGitHub
    from tests.scm_github.fake_limits import FakeLimits
    from tests.scm_github.fake_server import FakeGitHubServer
    from tests.scm_github.genuine import Genuine

    common.quiet_logs()
    root = Path(args.root)
    repos = min(REPOS, args.strategies)  # a repository without strategies cannot be built
    fleet = common.Fleet(root / "remotes", args.strategies, repos=repos, pending_every=1).build()
    (root / FLEET).write_bytes(pickle.dumps(fleet))
    unlimited = 10**9
    limits = FakeLimits(
        primary=unlimited,
        concurrent=unlimited,
        points_per_minute=unlimited,
        content_per_minute=unlimited,
        content_per_hour=unlimited,
    )
    genuine = Genuine(common.ROOT / "tests" / "fixtures")

    def fake(api_url: str) -> FakeGitHub:
        return FakeGitHub(genuine, base_url=api_url, tokens=(TOKEN,), limits=limits, record=False)

    with FakeGitHubServer(fake) as server:
        for r in range(fleet.repos):
            server.fake.add_repository(f"{scale.GITHUB_OWNER}/gitops-{r}", fleet.repo_path(r))
        for key, sha in fleet.active.items():
            server.fake.post_status(repo_of(fleet, key), sha, "health", "success")
        first = fleet.environments[0]
        answer({"url": server.api_url})
        for line in sys.stdin:
            command = line.strip()
            if command == "advance":
                dry = advance(fleet)
                proposed = {n: fleet.proposed[f"{n}/{first}"] for n in fleet.strategy_names()}
                answer({"dry": dry, "proposed": proposed})
            elif command == "ci":
                for name in fleet.strategy_names():
                    key = f"{name}/{first}"
                    server.fake.post_status(
                        repo_of(fleet, key), fleet.proposed[key], "ci", "success"
                    )
                answer({"ci": args.strategies})
            elif command == "stop":
                break


def advance(fleet: common.Fleet) -> str:
    """A hydrator's next change: a new dry commit on every repository's ``main`` (the
    same SHA in each, as the fleet's), rendered onto every strategy's first ``-next``
    with its note; ``fleet.proposed`` follows. The new dry SHA."""
    first = fleet.environments[0]
    found = ""
    for r in range(fleet.repos):
        path = fleet.repo_path(r)
        dry = common.FastImport()
        n = int(common.git(path, "rev-list", "--count", "refs/heads/main")) + 1
        mark = dry.commit(
            "refs/heads/main",
            f"Bump apps to v{n}\n",
            {"apps/README.md": f"v{n}\n"},
            parent=common.git(path, "rev-parse", "refs/heads/main"),
        )
        found = dry.run(path)[mark]
        metadata = common.render_metadata(dry_sha=found, repo_url=str(path), subject=f"v{n}")
        stream = common.FastImport()
        blob = stream.blob(metadata.encode())
        notes: dict[str, str] = {}
        planned: list[tuple[str, str]] = []
        for i in range(r, fleet.strategies, fleet.repos):
            key = f"app-{i}/{first}"
            files = {
                f"apps/app-{i}/{first}/manifest.yaml": f"app: app-{i}\nenv: {first}\nimage: {n}\n",
                common.METADATA_FILE: blob,
            }
            ref = f"refs/heads/{key}-next"
            nxt = stream.commit(ref, f"hydrate v{n} for {key}\n", files, parent=fleet.proposed[key])
            notes[nxt] = metadata
            planned.append((key, nxt))
        notes_tip = common.git(path, "rev-parse", common.NOTES_REF)
        stream.commit(
            common.NOTES_REF,
            "Notes added by the bench hydrator\n",
            {},
            notes=notes,
            parent=notes_tip,
        )
        marks = stream.run(path)
        for key, nxt in planned:
            fleet.proposed[key] = marks[nxt]
    return found


def serve(args: argparse.Namespace) -> None:
    """The daemon, on the fleet the GitHub process built, against it over HTTP; then obey
    this process's commands on stdin (one word a line): ``merged`` (how many strategies
    run the change in their first environment), ``idle``, ``cpu`` (the process's CPU
    seconds and its git's), ``stop``."""
    from promoter.http import ThreadServer
    from promoter.wiring import Daemon

    common.quiet_logs()
    root = Path(args.root)
    fleet: common.Fleet = pickle.loads((root / FLEET).read_bytes())
    os.environ[scale.GITHUB_TOKEN_ENV] = TOKEN
    os.environ[scale.GITHUB_SECRET_ENV] = scale.GITHUB_SECRET
    config = scale.fleet_config(fleet, root / "state", 0, github=True, github_url=args.github_url)
    daemon = Daemon(config)
    unbudgeted(daemon.runtime)
    server = ThreadServer(daemon.app, args.port, name="storm-uvicorn").start(timeout=60)
    names = fleet.strategy_names()
    first = fleet.environments[0]
    proposed = {name: fleet.proposed[f"{name}/{first}"] for name in names}
    common.wait_for(
        lambda: (
            scale.settled(daemon.runtime, names, None)
            and all(daemon.runtime.reconciler.view(n) for n in names)
        ),
        timeout=args.timeout,
        what="the cold start",
        poll=0.1,
    )
    answer({"ready": True, "proposed": proposed, "repos": fleet.repos})
    for line in sys.stdin:
        command = line.strip()
        word, _, dry = command.partition(" ")
        if word == "merged":
            target = dry or fleet.dry["D2"]
            answer({"merged": merged(daemon.runtime, names, target)})
        elif word == "proposed":
            answer({"proposed": awaiting(daemon.runtime, names, dry)})
        elif command == "refresh":  # the hydrator's push webhooks, in one call
            daemon.runtime.enqueue(names)
            answer({"refreshed": len(names)})
        elif command == "idle":
            answer(idle(daemon.runtime, names))
        elif command == "cpu":
            answer({"cpu_s": common.cpu_seconds()})
        elif command == "stop":
            break
    server.stop()


FLEET = "fleet.pickle"
"""The fleet the GitHub process built, for the daemon's process."""
TOKEN = "ghp_storm00000000000000000000000000000000"


def repo_of(fleet: common.Fleet, key: str) -> str:
    index = int(key.split("/")[0].split("-")[1]) % fleet.repos
    return f"{scale.GITHUB_OWNER}/gitops-{index}"


def unbudgeted(runtime: Any) -> None:
    """GitHub's rate limits are not what this measures (``credential_budget`` does)."""
    from dataclasses import replace

    from scm_plugins.budget import CredentialBudget
    from scm_plugins.github.limits import GITHUB_LIMITS

    free = 10**9
    limits = replace(
        GITHUB_LIMITS,
        primary=free,
        concurrent=free,
        points_per_minute=free,
        content_per_minute=free,
        content_per_window=free,
    )
    runtime.plugins["github"].calls.budget = CredentialBudget(limits)


def _first_environments(runtime: Any, names: list[str]) -> Iterator[Any]:
    for name in names:
        view = runtime.reconciler.view(name)
        if view is not None and view.snapshot is not None:
            yield view.snapshot.environments[0]


def merged(runtime: Any, names: list[str], dry: str) -> int:
    """Strategies whose first environment runs dry commit ``dry``."""
    return sum(
        1
        for env in _first_environments(runtime, names)
        if env.active is not None and env.active.dry_sha == dry
    )


def awaiting(runtime: Any, names: list[str], dry: str) -> int:
    """Strategies whose first environment has ``dry`` proposed in an open pull request."""
    return sum(
        1
        for env in _first_environments(runtime, names)
        if env.proposed is not None
        and env.proposed.dry_sha == dry
        and env.pull_request is not None
        and env.pull_request.state == "open"
    )


SOON = 1.0
"""Seconds: a key due later than this is not work in hand. The daemon's periodic resync
spreads its re-reads of settled strategies over its interval (one every 4 seconds
here), so a daemon with nothing else to do always has one due later; waiting for none
left the benchmark waiting until its timeout whenever that resync came before a
storm."""


def idle(runtime: Any, names: list[str]) -> dict[str, Any]:
    """Whether the daemon is idle, and the strategies whose view shows an error. The copy
    of the views dies here: a copy kept by this loop until its next poll would hold every
    view of before the storm alive through it, which the daemon itself never does."""
    views = runtime.reconciler.all_views()
    errors = sorted(n for n in names if (v := views.get(n)) is None or v.error)
    queue = runtime.queue
    due = queue.next_due()
    return {"idle": queue.idle() and (due is None or due > SOON), "errors": errors}


def answer(value: dict[str, Any]) -> None:
    print(json.dumps(value), flush=True)


# --- the storm (this process) ---------------------------------------------------------


def deliveries(proposed: dict[str, str], repos: int, total: int) -> list[tuple[str, bytes]]:
    """``(delivery id, body)`` of every delivery, shuffled: the ``ci`` ones, each twice,
    and statuses of other keys on the same commits until ``total``."""
    template = json.loads((scale_fixture() / "status/payload.json").read_text())
    items = list(proposed.items())

    def body(name: str, sha: str, key: str, state: str) -> bytes:
        full_name = f"{scale.GITHUB_OWNER}/gitops-{int(name.split('-')[1]) % repos}"
        payload = dict(template)
        payload.update(sha=sha, context=key, state=state)
        payload["repository"] = {
            **template["repository"],
            "full_name": full_name,
            "name": full_name.split("/")[1],
        }
        for field in ("clone_url", "html_url", "git_url", "ssh_url", "url", "svn_url"):
            payload["repository"].pop(field, None)
        return json.dumps(payload).encode()

    out: list[tuple[str, bytes]] = []
    for name, sha in items:
        delivery = (str(uuid.uuid4()), body(name, sha, "ci", "success"))
        out += [delivery, delivery]  # GitHub's redelivery: the same id
    n = 0
    while len(out) < total:
        name, sha = items[n % len(items)]
        key = OTHER_KEYS[(n // len(items)) % len(OTHER_KEYS)]
        state = "pending" if (n // (len(items) * len(OTHER_KEYS))) % 2 == 0 else "success"
        out.append((str(uuid.uuid4()), body(name, sha, key, state)))
        n += 1
    random.Random(33).shuffle(out)
    return out[:total]


def scale_fixture() -> Path:
    return common.ROOT / "tests" / "fixtures" / "github" / "webhooks" / "api.github.com"


def requests(items: list[tuple[str, bytes]]) -> list[bytes]:
    """Each delivery as the bytes of its HTTP request, signed: made before the storm, so
    that the sender spends its share of the cores on sending."""
    from webhooks.verify import GitHubSignature

    out = []
    for delivery, raw in items:
        head = (
            "POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nX-GitHub-Event: status\r\n"
            f"X-GitHub-Delivery: {delivery}\r\n"
            f"X-Hub-Signature-256: {GitHubSignature.sign(scale.GITHUB_SECRET, raw)}\r\n"
            f"User-Agent: GitHub-Hookshot/bench\r\nContent-Length: {len(raw)}\r\n\r\n"
        )
        out.append(head.encode() + raw)
    return out


class Connection(asyncio.Protocol):
    """One keep-alive connection that sends a request and waits for its whole answer.

    A bare protocol (as in ``webhook_throughput``), not an HTTP client library: with
    httpx the sender took 3.7 ms of CPU a delivery, more than the daemon, on the cores
    they share.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.answer: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        split = split_answer(self.buffer)
        if split is None:
            return
        whole, self.buffer = split
        if self.answer is not None and not self.answer.done():
            self.answer.set_result(whole)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(ConnectionResetError("the daemon closed the connection"))

    async def send(self, request: bytes) -> tuple[str, str]:
        """``(status, result)`` of the answer to ``request``."""
        assert self.transport is not None
        if self.transport.is_closing():  # closed by the daemon while idle: no answer would come
            raise ConnectionResetError("the daemon closed the connection")
        self.answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        whole = await asyncio.wait_for(self.answer, 60)
        body = whole[whole.find(b"\r\n\r\n") + 4 :]
        try:
            result = json.loads(body).get("result", "")
        except ValueError:
            result = "not JSON"
        return whole[9:12].decode(), result


async def storm(port: int, items: list[bytes], seconds: float, connections: int) -> dict[str, Any]:
    """Send every request, paced evenly over ``seconds``; the answers by status."""
    loop = asyncio.get_running_loop()
    answers: dict[str, int] = {}
    latencies: list[float] = []
    started = time.perf_counter()
    step = seconds / len(items)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(items)):
        queue.put_nowait(i)

    async def connect() -> Connection:
        _, connection = await loop.create_connection(Connection, "127.0.0.1", port)
        return connection

    async def sender() -> None:
        connection = await connect()
        while not queue.empty():
            i = queue.get_nowait()
            wait = started + i * step - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            for attempt in (1, 2):  # a connection reset is redelivered once, as by hand
                sent = time.perf_counter()
                try:
                    status, result = await connection.send(items[i])
                except (ConnectionError, TimeoutError) as exc:
                    outcome = f"{type(exc).__name__} (attempt {attempt})"
                    answers[outcome] = answers.get(outcome, 0) + 1
                    connection = await connect()
                    continue
                latencies.append(time.perf_counter() - sent)
                outcome = f"{status} {result}"
                answers[outcome] = answers.get(outcome, 0) + 1
                break
        assert connection.transport is not None
        connection.transport.close()

    await asyncio.gather(*(sender() for _ in range(connections)))
    took = time.perf_counter() - started
    return {
        "sent": len(items),
        "seconds": round(took, 2),
        "answers": dict(sorted(answers.items())),
        "p50_ms": round(common.percentile([x * 1000 for x in latencies], 50), 2),
        "p99_ms": round(common.percentile([x * 1000 for x in latencies], 99), 2),
    }


class Child:
    """A process of this benchmark's (the daemon's, or GitHub's): commands on its stdin,
    one JSON answer a line on its stdout."""

    def __init__(self, args: argparse.Namespace, root: str, *role: str) -> None:
        command = [sys.executable, __file__, *role, "--root", root]
        command += ["--strategies", str(args.strategies), "--timeout", str(args.timeout)]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
            env={**os.environ, "PYTHONPATH": str(common.ROOT)},
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                found: dict[str, Any] = json.loads(line)
                return found
        raise RuntimeError(f"the benchmark's process exited ({self.proc.wait()})")

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
        return 0.0

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, BrokenPipeError):
            self.ask("stop")
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def settle(child: Child, timeout: float) -> dict[str, Any]:
    """Wait until the daemon is idle three polls in a row; its last answer."""
    quiet = 0
    deadline = time.monotonic() + timeout
    while True:
        state = child.ask("idle")
        quiet = quiet + 1 if state["idle"] else 0
        if quiet >= 3:
            return state
        if time.monotonic() > deadline:
            raise TimeoutError("the daemon did not fall idle")
        time.sleep(0.5)


REST = 3.0
"""Seconds the daemon is left idle before its RSS is read."""


def rested_rss(child: Child, timeout: float) -> float:
    """The daemon's RSS once it is idle (``settle``) and has rested ``REST`` seconds more,
    still idle."""
    settle(child, timeout)
    time.sleep(REST)
    settle(child, timeout)
    return child.rss_mb()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from promoter.http import free_port

    with tempfile.TemporaryDirectory(prefix="bench-storm-") as root:
        port = free_port()
        github = Child(args, root, "--github")
        child: Child | None = None
        try:
            url = github.read()["url"]
            started = time.perf_counter()
            child = Child(args, root, "--child", "--port", str(port), "--github-url", url)
            ready = child.read()
            cold_s = time.perf_counter() - started
            rss_before = rested_rss(child, args.timeout)
            items = requests(deliveries(ready["proposed"], ready["repos"], args.deliveries))
            github.ask("ci")
            daemon_cpu = child.ask("cpu")["cpu_s"]
            storm_started = time.perf_counter()
            sender_cpu = common.cpu_seconds()
            sent = asyncio.run(storm(port, items, args.seconds, args.connections))
            sender_cpu = common.cpu_seconds() - sender_cpu
            daemon_storm_cpu = child.ask("cpu")["cpu_s"] - daemon_cpu
            common.wait_for(
                lambda: child.ask("merged")["merged"] >= args.strategies,
                timeout=args.timeout,
                what="every change merged",
                poll=0.5,
            )
            all_merged_s = time.perf_counter() - storm_started
            daemon_cpu = child.ask("cpu")["cpu_s"] - daemon_cpu
            final = settle(child, args.timeout)
            rss_after = rested_rss(child, args.timeout)
            merged_count = child.ask("merged")["merged"]
            later = [
                again(args, child, github, port, ready["repos"]) for _ in range(args.storms - 1)
            ]
        finally:
            if child is not None:
                child.stop()
            github.stop()
    return {
        "bench": "webhook_storm",
        "strategies": args.strategies,
        "deliveries": args.deliveries,
        "storm": {
            **sent,
            "sender_cpu_s": round(sender_cpu, 1),
            "daemon_cpu_s": round(daemon_storm_cpu, 1),
        },
        "daemon_cpu_to_all_merged_s": round(daemon_cpu, 1),
        "start_to_ready_s": round(cold_s, 1),
        "all_merged_s": round(all_merged_s, 1),
        "merged": merged_count,
        "errors": final["errors"],
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_after,
        "rss_growth": round(rss_after / rss_before - 1, 4) if rss_before else None,
        "later_storms": later,
        "machine": common.machine(),
    }


def again(
    args: argparse.Namespace, child: Child, github: Child, port: int, repos: int
) -> dict[str, Any]:
    """One more storm on the daemon the first one left: the hydrator pushes the next
    change everywhere, the daemon opens its pull requests, then the same storm for the
    new commits; the daemon's RSS before and after it, measured as for the first."""
    pushed = github.ask("advance")
    child.ask("refresh")
    common.wait_for(
        lambda: child.ask(f"proposed {pushed['dry']}")["proposed"] >= args.strategies,
        timeout=args.timeout,
        what="a pull request for every new change",
        poll=0.5,
    )
    rss_before = rested_rss(child, args.timeout)
    items = requests(deliveries(pushed["proposed"], repos, args.deliveries))
    github.ask("ci")
    started = time.perf_counter()
    sent = asyncio.run(storm(port, items, args.seconds, args.connections))
    common.wait_for(
        lambda: child.ask(f"merged {pushed['dry']}")["merged"] >= args.strategies,
        timeout=args.timeout,
        what="every change merged",
        poll=0.5,
    )
    all_merged_s = time.perf_counter() - started
    final = settle(child, args.timeout)
    rss_after = rested_rss(child, args.timeout)
    return {
        "sent_s": sent["seconds"],
        "answers": sent["answers"],
        "all_merged_s": round(all_merged_s, 1),
        "errors": final["errors"],
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_after,
        "rss_growth": round(rss_after / rss_before - 1, 4) if rss_before else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--strategies", type=int, default=1000)
    parser.add_argument("--deliveries", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="the storm's length")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--storms", type=int, default=1, help="storms in a row, each on the next change"
    )
    parser.add_argument("--child", action="store_true", help="(internal) run the daemon")
    parser.add_argument("--github", action="store_true", help="(internal) run GitHub's side")
    parser.add_argument("--root", default="")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--github-url", default="")
    args = parser.parse_args(argv)
    if args.child:
        serve(args)
        return 0
    if args.github:
        serve_github(args)
        return 0
    figures = measure(args)
    answers = figures["storm"]["answers"]
    unexpected = {k: v for k, v in answers.items() if k not in ("202 accepted", "202 duplicate")}
    checks = {
        "every_delivery_answered_202": not unexpected and sum(answers.values()) == args.deliveries,
        "storm_in_time": figures["storm"]["seconds"] <= args.seconds * 1.1,
        "every_change_merged": figures["merged"] >= args.strategies,
        "no_errors": not figures["errors"],
        "rss_back": figures["rss_growth"] is not None
        and figures["rss_growth"] <= TARGETS["rss_growth"],
    }
    figures = {**figures, "targets": TARGETS, "pass": checks}
    storm_figures = figures["storm"]
    lines = [
        f"{args.strategies} strategies; ready {figures['start_to_ready_s']} s after start",
        f"storm: {storm_figures['sent']} deliveries in {storm_figures['seconds']} s,"
        f" answers {answers}, p50 {storm_figures['p50_ms']} ms, p99 {storm_figures['p99_ms']} ms",
        f"CPU while it was sent: the sender {storm_figures['sender_cpu_s']} s, the daemon's"
        f" process (with the fake and its git) {storm_figures['daemon_cpu_s']} s;"
        f" the daemon's until every change merged {figures['daemon_cpu_to_all_merged_s']} s",
        f"every change merged {figures['all_merged_s']} s after the storm began"
        f" ({figures['merged']}/{args.strategies}); errors {len(figures['errors'])}",
        f"RSS {figures['rss_before_mb']} MB before, {figures['rss_after_mb']} MB after"
        f" ({figures['rss_growth']:+.1%})",
        *(
            f"storm {n}: sent in {later['sent_s']} s, every change merged"
            f" {later['all_merged_s']} s after it began; RSS {later['rss_before_mb']} MB before,"
            f" {later['rss_after_mb']} MB after ({later['rss_growth']:+.1%})"
            for n, later in enumerate(figures["later_storms"], start=2)
        ),
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        "  ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in checks.items()),
    ]
    common.report(figures, lines)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
