"""GitHub's merge queue end to end (daemon, GitHub plugin, fake GitHub, real git): a branch
that requires the queue gets its promotion PR enqueued, never merged through REST; the
queue dequeues it (a failed attempt, told on the PR and in the API), the promoter enqueues
it again, and the queue merges it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.fixture_paths import GITHUB_WEBHOOKS
from tests.support import GitOpsRepo, wait_for

from .conftest import TOKEN, TOKEN_ENV
from .fake_github import FakeGitHub
from .genuine import Genuine
from .test_end_to_end import (
    FULL_NAME,
    SECRET,
    SECRET_ENV,
    GitHubCI,
    config_text,
    env_view,
    promoted,
)

DEV = "environment/dev"
WHY = "the merge group's required checks failed"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        github.require_merge_queue(FULL_NAME, DEV)
        yield github


def dequeued_hook(ci: GitHubCI, number: int) -> None:
    """GitHub's ``pull_request`` ``dequeued`` webhook (the opened example, as GitHub sends
    the dequeued one: the same pull request object, ``reason`` added)."""
    payload = json.loads((GITHUB_WEBHOOKS / "pull_request/opened.payload.json").read_text())
    stored = ci.fake.pull(FULL_NAME, number)
    payload["pull_request"].update(
        {k: stored[k] for k in ("number", "id", "head", "base", "state")}
    )
    payload.update(action="dequeued", number=number, reason="CI_FAILURE")
    ci.deliver("pull_request", payload)


def merge_group_hook(ci: GitHubCI) -> None:
    payload = json.loads(
        (GITHUB_WEBHOOKS / "merge_group/checks_requested.payload.json").read_text()
    )
    payload["merge_group"]["base_ref"] = f"refs/heads/{DEV}"
    ci.deliver("merge_group", payload)


def enqueues(fake: FakeGitHub) -> list[dict[str, Any]]:
    return [
        c.body["variables"]
        for c in fake.calls
        if c.path == "/graphql" and "enqueuePullRequest" in c.body["query"]
    ]


def test_a_queue_that_dequeues_then_succeeds(
    fake: FakeGitHub,
    gitops: GitOpsRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    # a quicker retry for the test
    monkeypatch.setattr("promoter.engine.promotion.queue.RETRY", 2.0)
    text = config_text(gitops.path, tmp_path / "state").replace(
        "- {branch: environment/dev}", "- {branch: environment/dev, mergeQueue: true}"
    )
    daemon = Daemon(parse_config(text))
    with TestClient(daemon.app) as client:
        ci = GitHubCI(client, fake)
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        number, head = env["pullRequest"]["number"], env["proposed"]["hydratedSha"]
        ci.check_run(head, "ci", "success")
        wait_for(lambda: fake.in_queue(FULL_NAME, number), what="the PR enqueued")
        merge_group_hook(ci)
        queued = wait_for(
            lambda: "in the merge queue" in (e := env_view(client, DEV))["reason"] and e,
            what="the queue shown",
        )
        assert queued["state"] == "promoting"

        fake.dequeue(FULL_NAME, number, WHY)
        dequeued_hook(ci, number)
        failed = wait_for(
            lambda: "dequeued from the merge queue" in (e := env_view(client, DEV))["reason"] and e,
            what="the failed attempt in the API",
        )
        assert failed["reason"].startswith(f"dequeued from the merge queue (attempt 1): {WHY}")
        assert failed["state"] == "blocked"
        comment = wait_for(lambda: fake.comments_of(FULL_NAME, number), what="the PR told")
        assert WHY in comment[0]
        wait_for(lambda: len(enqueues(fake)) == 2, what="enqueued again after the backoff")

        fake.merge_from_queue(FULL_NAME, number)
        wait_for(partial(promoted, client, DEV, change), what="dev promoted by the queue")
    assert [v["head"] for v in enqueues(fake)] == [head, head]  # the head guard, each time
    rest_merges = [c for c in fake.calls if c.method == "PUT" and c.path.endswith("/merge")]
    assert rest_merges == []
