"""On GitHub with webhooks and no ref polling: at most 4 API calls per environment.

GitHub announces every push (the hydrator's and each merge's) with a ``push``
webhook whose ``head_commit.distinct`` says the commit is new. The promoter then
reads nothing about that commit: its statuses can only arrive later, and they arrive
by webhook. What remains per environment is the PR, the promoter's own check (written
once, when decided), the re-read of the required gates before the merge, and the merge.
A status whose webhook was lost is still found by the next resync.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import TOKEN, TOKEN_ENV
from .fake_github import Call, FakeGitHub
from .genuine import Genuine
from .test_end_to_end import (
    FULL_NAME,
    SECRET,
    SECRET_ENV,
    GitHubCI,
    config_text,
    env_view,
    promoted,
    wait_pr,
)

BUDGET = 4
READS = ("/status", "/check-runs")


@pytest.fixture
def repo(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def hub(genuine: Genuine, repo: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, repo.path)
        yield github


@pytest.fixture
def robot(
    hub: FakeGitHub, repo: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHubCI]:
    fake, gitops = hub, repo
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    text = config_text(gitops.path, tmp_path / "state", poll_interval="1h")
    daemon = Daemon(parse_config(text))
    with TestClient(daemon.app) as client:
        client.runtime = daemon.runtime  # type: ignore[attr-defined]
        wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
        ci = GitHubCI(client, fake)
        ci.announced.watch_reads(monkeypatch)
        for branch in ENVIRONMENTS:
            ci.status(gitops.tip(branch), "health")
        wait_for(lambda: daemon.runtime.queue.idle(), what="an idle queue")
        yield ci


def read_of(call: Call) -> str | None:
    """The commit whose statuses ``call`` reads: over REST, or in one GraphQL request."""
    if call.method == "GET" and call.path.endswith(READS):
        return str(call.path.split("/")[-2])
    if call.path == "/graphql" and isinstance(call.body, dict):
        sha = (call.body.get("variables") or {}).get("sha")
        return sha if isinstance(sha, str) else None
    return None


def test_each_environment_costs_at_most_four_calls_and_no_new_commit_is_read(
    robot: GitHubCI, hub: FakeGitHub, repo: GitOpsRepo
) -> None:
    fake, gitops = hub, repo
    mark = len(fake.calls)
    change = robot.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")
    heads: dict[str, str] = {}
    for branch in ENVIRONMENTS:
        heads[branch] = wait_pr(robot.client, branch)["proposed"]["hydratedSha"]
        robot.check_run(heads[branch], "ci", "success")
        wait_for(partial(promoted, robot.client, branch, change), what=f"{branch} promoted")
        robot.status(gitops.tip(branch), "health")
    wait_for(lambda: robot.client.runtime.queue.idle(), what="an idle queue")  # type: ignore[attr-defined]

    # A push of several branches brings one webhook per branch: the first one's reconcile
    # may read another branch's new tip before its webhook arrives (an SCM read is right).
    early = robot.announced.early(
        (i, sha) for i, c in enumerate(fake.calls[mark:], mark) if (sha := read_of(c))
    )
    assert set(early.values()) <= {gitops.tip(f"{b}-next") for b in ENVIRONMENTS}, early
    mine = (f"token {TOKEN}", f"bearer {TOKEN}")  # GraphQL takes the bearer scheme
    calls = [c for c in fake.calls[mark:] if c.authorization in mine]
    ours = [c for c in calls if c.method != "POST" or "/check-runs" not in c.path]
    ours = [c for c in ours if not (c.method == "POST" and c.body.get("context") == "health")]
    ours = [c for c in ours if not any(c is fake.calls[i] for i in early)]
    assert len(ours) <= BUDGET * len(ENVIRONMENTS), [(c.method, c.path) for c in ours]
    merges = {gitops.tip(b) for b in ENVIRONMENTS}
    assert not [c.path for c in ours if c.method == "GET" and c.path.endswith(READS)]
    reads = [c.body["variables"]["sha"] for c in ours if c.path == "/graphql"]
    # Only the pre-merge re-reads of the PR heads' gates (one GraphQL request each): no
    # read of a commit a push webhook announced, neither a proposed head nor a merge commit.
    assert sorted(reads) == sorted(heads.values())
    assert not merges & set(reads)


def test_a_status_whose_webhook_was_lost_is_found_by_the_next_resync(
    robot: GitHubCI, hub: FakeGitHub, repo: GitOpsRepo
) -> None:
    fake, gitops = hub, repo
    change = robot.hydrate(gitops, "1.2.0", "Bump guestbook to 1.2.0")
    head = wait_pr(robot.client, "environment/dev")["proposed"]["hydratedSha"]
    fake.post_check_run(FULL_NAME, head, "ci", "completed", "success")  # no webhook follows
    runtime = robot.client.runtime  # type: ignore[attr-defined]
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    assert not promoted(robot.client, "environment/dev", change)
    runtime.resync.heard_at.clear()  # no webhook for a resync interval: they are silent

    runtime.scheduler.resync()

    wait_for(partial(promoted, robot.client, "environment/dev", change), what="dev promoted")


def test_while_webhooks_flow_a_lost_status_is_found_within_the_settled_recheck(
    robot: GitHubCI, hub: FakeGitHub, repo: GitOpsRepo
) -> None:
    fake, gitops = hub, repo
    change = robot.hydrate(gitops, "1.2.0", "Bump guestbook to 1.2.0")  # its push webhook
    head = wait_pr(robot.client, "environment/dev")["proposed"]["hydratedSha"]
    fake.post_check_run(FULL_NAME, head, "ci", "completed", "success")  # no webhook follows
    runtime = robot.client.runtime  # type: ignore[attr-defined]
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    dev = partial(promoted, robot.client, "environment/dev", change)

    resyncs = 0
    while not dev() and resyncs < runtime.resync.rounds:
        runtime.scheduler.resync()
        resyncs += 1
        wait_for(lambda: runtime.queue.idle(), what="an idle queue")
        assert runtime.resync.last.flowing == ["gitops"]

    wait_for(dev, what="dev promoted")
    assert resyncs > 1  # read in its turn, not at every resync


def test_a_merge_commit_the_promoter_made_is_not_read_while_its_push_webhook_is_late(
    robot: GitHubCI, hub: FakeGitHub, repo: GitOpsRepo
) -> None:
    # GitHub delivers a merge's push webhook seconds later, often after the promoter's
    # next reconcile: here they are held until every environment runs the change.
    fake, gitops = hub, repo
    late: list[tuple[str, str, str | None, str]] = []
    fake.on_push = lambda *push: late.append(push)
    mark = len(fake.calls)
    change = robot.hydrate(gitops, "1.3.0", "Bump guestbook to 1.3.0")
    for branch in ENVIRONMENTS:
        head = wait_pr(robot.client, branch)["proposed"]["hydratedSha"]
        robot.check_run(head, "ci", "success")
        wait_for(partial(promoted, robot.client, branch, change), what=f"{branch} promoted")
        robot.status(gitops.tip(branch), "health")
    wait_for(lambda: robot.client.runtime.queue.idle(), what="an idle queue")  # type: ignore[attr-defined]

    merges = {gitops.tip(b) for b in ENVIRONMENTS}
    assert {push[3] for push in late} == merges
    reads = [c.path for c in fake.calls[mark:] if c.method == "GET" and c.path.endswith(READS)]
    assert not any(sha in path for sha in merges for path in reads), reads
    for full_name, branch, before, after in late:
        robot.push(branch, before, after, full_name)
