"""The fence holds to the wire: a write's hold is checked again right before each of its
requests is sent (after any wait for the SCM budget, after the reads that come before
it), and each request's deadline ends before the hold does, so that a request still in
flight when the hold lapses is cut, at the SCM (GitHub's transport) as at the API server
(a status write)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from promoter.config import Repository
from promoter.errors import HoldLapsed, NotOwner, RateBudgetWait, ScmUnavailable
from promoter.http import ThreadServer, free_port
from promoter.kube.client.api import Kube, KubeError
from promoter.kube.client.connect import loopback_client
from promoter.kube.resources.commit_statuses import CommitStatusIndex
from promoter.kube.runtime.scm import ClusterScm
from promoter.kube.shards.fence import ShardFence
from scm_plugins.budget import Cost, CredentialBudget, Limits, Priority
from scm_plugins.calls import ScmCalls
from scm_plugins.github.client import GitHubClient
from scm_plugins.github.errors import translate
from scm_plugins.hold import holding
from tests.kube.fake_api import FakeKube
from tests.kube.shards.lease_rounds import Clock

DEADLINE = 3.0
REPO = Repository(name="team.gitops", url="/nowhere", scm_provider="github")
LIMITS = Limits(
    window=3600.0,
    primary=5000,
    burst=0.1,
    concurrent=10,
    points_per_minute=100_000,
    content_per_minute=80,
    content_per_window=500,
)
MERGE = Cost(priority=Priority.MERGE, points=5, content=True)


class SlowReads:
    """A plugin whose merge reads the pull request first (taking ``read`` seconds on the
    fence's clock: a slow answer, or a wait for room in the budget), then merges."""

    name = "slow"

    def __init__(self, clock: Clock, read: float, budget: CredentialBudget) -> None:
        self.clock = clock
        self.read = read
        self.calls = ScmCalls("slow", lambda exc: None, budget=budget)
        self.sent: list[str] = []

    def merge_pull_request(self, *, repo: Repository, number: int, **kwargs: Any) -> str:
        with self.calls.call("get_pull_request"):
            self.clock.now += self.read
        with self.calls.call("merge_pull_request", MERGE):
            self.sent.append(f"merge {number}")
        return "m" * 40


def fenced(read: float) -> tuple[Clock, ShardFence, SlowReads, ClusterScm]:
    clock = Clock()
    fence = ShardFence(shard_of=lambda repo: "shard-001", renew_deadline=DEADLINE, clock=clock)
    budget = CredentialBudget(LIMITS, clock=clock)
    inner = SlowReads(clock, read, budget)
    scm = ClusterScm(inner, guard=fence.writing, statuses=CommitStatusIndex())  # type: ignore[arg-type]
    return clock, fence, inner, scm


def test_a_merge_whose_hold_lapses_while_it_reads_first_is_never_sent() -> None:
    clock, fence, inner, scm = fenced(read=1.5)
    fence.renewed("shard-001", started=clock.now)
    scm.merge_pull_request(repo=REPO, number=1, expected_head_sha="b" * 40, message="m")
    clock.now += 1.0  # 2 s of hold left when the next merge begins: the guard lets it in
    with pytest.raises(HoldLapsed):
        scm.merge_pull_request(repo=REPO, number=2, expected_head_sha="b" * 40, message="m")
    assert inner.sent == ["merge 1"]
    budget = inner.calls.budget
    assert budget is not None and budget.in_flight() == 0
    assert budget.stats.admitted == 2  # both merges were admitted...
    budget.share(2 / LIMITS.content_per_window)  # room for two content calls an hour
    clock.now += 70.0  # and one a minute
    fence.renewed("shard-001", started=clock.now)
    scm.merge_pull_request(repo=REPO, number=3, expected_head_sha="b" * 40, message="m")
    assert inner.sent == ["merge 1", "merge 3"]  # ...and the one never sent gave its room back
    with pytest.raises(RateBudgetWait, match="content"):
        scm.merge_pull_request(repo=REPO, number=4, expected_head_sha="b" * 40, message="m")


def test_a_merge_whose_hold_moved_while_it_read_is_refused_as_not_ours() -> None:
    clock, fence, inner, scm = fenced(read=0.5)
    fence.renewed("shard-001", started=clock.now)
    original = inner.merge_pull_request

    def handed_over_meanwhile(**kwargs: Any) -> str:
        fence.revoke("shard-001")
        return original(**kwargs)

    inner.merge_pull_request = handed_over_meanwhile  # type: ignore[method-assign]
    with pytest.raises(NotOwner):
        scm.merge_pull_request(repo=REPO, number=1, expected_head_sha="b" * 40, message="m")
    assert inner.sent == []


class Hold:
    """A hold of ``seconds`` from now on the real monotonic clock."""

    def __init__(self, seconds: float) -> None:
        import time

        self.until = time.monotonic() + seconds

    def left(self) -> float:
        import time

        left = self.until - time.monotonic()
        if left <= 0:
            raise HoldLapsed("lapsed")
        return left


@pytest.fixture
def slow_github() -> Iterator[tuple[str, list[str], threading.Event]]:
    """An API that answers a pull request's creation 3 s after it came, or once
    ``release`` is set."""
    seen: list[str] = []
    release = threading.Event()

    async def create(request: Request) -> JSONResponse:
        seen.append(request.url.path)
        for _ in range(150):
            if release.is_set():
                break
            await asyncio.sleep(0.02)
        return JSONResponse({"number": 7}, status_code=201)

    app = Starlette(routes=[Route("/repos/acme/deploy/pulls", create, methods=["POST"])])
    port = free_port()
    server = ThreadServer(app, port, name="slow-github").start()
    try:
        yield f"http://127.0.0.1:{port}", seen, release
    finally:
        release.set()
        server.stop(timeout=10)


def test_a_github_request_in_flight_when_the_hold_lapses_is_cut(
    slow_github: tuple[str, list[str], threading.Event],
) -> None:
    url, seen, release = slow_github
    client = GitHubClient(base_url=url, calls=ScmCalls("github", translate))
    try:
        with holding(Hold(0.5)), pytest.raises(ScmUnavailable):
            client.request(
                "open_pull_request",
                "POST",
                "/repos/acme/deploy/pulls",
                authorization="token x",
                body={"title": "t"},
                budgeted=False,
            )
        assert seen == ["/repos/acme/deploy/pulls"], "the request was sent, then cut"
        release.set()
        answered = client.request(  # outside any hold: the whole timeout
            "open_pull_request",
            "POST",
            "/repos/acme/deploy/pulls",
            authorization="token x",
            body={"title": "t"},
            budgeted=False,
        )
        assert answered == {"number": 7}
    finally:
        client.close()


def test_a_status_write_in_flight_when_the_hold_lapses_is_cut() -> None:
    fake = FakeKube()
    port = free_port()
    server = ThreadServer(fake.app, port, name="fake-kube").start()
    kube = Kube(loopback_client(f"http://127.0.0.1:{port}"))
    try:
        fake.preload(
            [
                {
                    "apiVersion": "promoter.argoproj.io/v1alpha1",
                    "kind": "PromotionStrategy",
                    "metadata": {"name": "app", "namespace": "team"},
                    "spec": {},
                }
            ]
        )
        fake.write_delays["promotionstrategies/status"] = 5.0
        with holding(Hold(0.5)), pytest.raises(KubeError):
            kube.patch_status("promotionstrategies", "team", "app", {"phase": "late"})
        with holding(Hold(-1.0)), pytest.raises(HoldLapsed):  # lapsed: nothing is sent
            kube.patch_status("promotionstrategies", "team", "app", {"phase": "late"})
    finally:
        fake.expire()
        server.stop(timeout=10)
        kube.client.close()
