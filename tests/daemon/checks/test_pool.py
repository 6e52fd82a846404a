"""The pool that runs the gates that ask other systems: many hanging backends, more than the
pool has threads, do not starve a healthy one, and the calls in flight are bounded in all."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pytest

from promoter.config import GateSpec, Repository
from promoter.daemon.checks.gate_calls import GateCalls, Unreachable
from promoter.daemon.checks.probes import Probes
from promoter.engine import CommitState, EnvironmentSnapshot, Snapshot
from promoter.models import CommitStatus
from promoter.state import StatusCache
from tests.faults.standins import Answer, Standin
from tests.support import wait_for

TOKEN = "PROMOTER_POOL_ARGOCD_TOKEN"
HANGING = 10
WORKERS = 2


class Silent:
    """A backend that takes connections and never answers (until it is closed)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self.sock.close()


class Recorder:
    """The SCM side of a check: every verdict published, in order."""

    def __init__(self) -> None:
        self.published: list[str] = []
        self._lock = threading.Lock()

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        with self._lock:
            self.published.append(sha)


def applications(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    return 200, "application/json", json.dumps({"items": []}).encode()


def snapshot(strategy: str, servers: list[str], timeout: float) -> Snapshot:
    """One environment per Argo CD server, each judging its running commit."""
    environments = tuple(
        EnvironmentSnapshot(
            branch=f"environment/e{i}",
            proposed_branch=f"environment/e{i}-next",
            auto_merge=True,
            active=CommitState(hydrated_sha=f"{strategy}-{i}", tree_sha="t", dry_sha="d"),
            gates=(
                GateSpec.model_validate(
                    {
                        "name": f"argo-{i}",
                        "argocd": {
                            "server": server,
                            "token": {"fromEnv": TOKEN},
                            "timeout": timeout,
                            "interval": 60,
                        },
                    }
                ),
            ),
        )
        for i, server in enumerate(servers)
    )
    return Snapshot(
        strategy=strategy,
        repository="gitops",
        dry_branch="main",
        environments=environments,
        now=datetime.now(UTC),
    )


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Silent], Standin]]:
    monkeypatch.setenv(TOKEN, "t0ken")
    with ExitStack() as stack:
        silent = [Silent() for _ in range(HANGING)]
        for server in silent:
            stack.callback(server.close)
        healthy = stack.enter_context(Standin(applications))
        yield silent, healthy


def test_more_hanging_backends_than_workers_leave_a_healthy_check_answered_first(
    world: tuple[list[Silent], Standin],
) -> None:
    silent, healthy = world
    repo = Repository.model_validate({"name": "gitops", "url": "/x", "scmProvider": "local"})
    scm, cache = Recorder(), StatusCache()
    probes = Probes(calls=GateCalls(per_backend=2), workers=WORKERS)
    plugin: Any = scm
    try:
        probes.plan(snapshot("hanging", [s.url for s in silent], timeout=10), repo, plugin, cache)
        probes.plan(snapshot("unrelated", [healthy.url], timeout=10), repo, plugin, cache)
        first = wait_for(lambda: list(scm.published), timeout=30, what="a verdict published")
        assert first == ["unrelated-0"]  # before any hanging call was given up
        assert sum(probes.calls.in_flight(f"argocd {s.url}") for s in silent) == HANGING
    finally:
        probes.close()


def test_calls_in_flight_are_bounded_in_all_and_a_late_backend_keeps_to_one() -> None:
    calls, release = GateCalls(per_backend=2, total=4), threading.Event()

    def hang() -> str:
        release.wait(10)
        return "late"

    try:
        for backend in ("a", "b"):
            for _ in range(2):
                calls.start(backend, hang, timeout=10)
        with pytest.raises(Unreachable, match="4 gate calls in flight"):
            calls.call("c", lambda: "fine", timeout=5)
        assert calls.in_flight_in_all() == 4
    finally:
        release.set()
    wait_for(lambda: calls.in_flight_in_all() == 0, what="the calls to end")
    with pytest.raises(Unreachable, match="no answer within"):
        calls.call("slow", lambda: (release.clear(), release.wait(10))[1], timeout=0.05)
    with pytest.raises(Unreachable, match="no answer to 1 earlier calls yet"):
        calls.call("slow", lambda: True, timeout=5)  # late: one call at a time
    release.set()
    wait_for(lambda: calls.in_flight("slow") == 0, what="the late call to end")
    assert calls.call("slow", lambda: "answered", timeout=5) == "answered"
    assert calls.call("slow", lambda: "again", timeout=5) == "again"
    calls.close()
