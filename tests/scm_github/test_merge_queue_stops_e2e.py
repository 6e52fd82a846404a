"""Stop means stop on GitHub's merge queue, end to end (daemon, GitHub plugin, fake GitHub,
real git): a freeze, a hold or a pin takes the queued promotion PR out of the queue
(``dequeuePullRequest``), says so on the PR and in the API, and nothing merges while it
lasts, not even a merge group whose checks pass; lifted, the PR is enqueued again, once. A
queue that merges before the dequeue lands (GitHub refuses the dequeue of a merged PR) is
a race: in the ledger, the API and on the PR."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
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
QUEUE_CHECK = "queue-ci"
OPS = "/api/v1/strategies/guestbook/"
Request = Callable[[TestClient], None]


def post(client: TestClient, path: str, body: dict[str, Any]) -> None:
    answer = client.post(path, json=body)
    assert answer.status_code == 200, answer.text


def pin(client: TestClient) -> None:
    runs = env_view(client, DEV)["active"]["drySha"]
    post(client, OPS + "pin", {"environment": "dev", "drySha": runs, "reason": "keep 1.0"})


def freeze(client: TestClient) -> None:
    body = {"strategy": "guestbook", "environment": "dev", "reason": "incident"}
    post(client, "/api/v1/freeze", body)


STOPS: dict[str, tuple[Request, Request, str]] = {
    "freeze": (
        freeze,
        lambda c: post(c, "/api/v1/unfreeze", {"strategy": "guestbook", "environment": "dev"}),
        "frozen by",
    ),
    "hold": (
        lambda c: post(c, OPS + "hold", {"environment": "dev", "reason": "bad build"}),
        lambda c: post(c, OPS + "release", {"environment": "dev"}),
        "is held in environment/dev",
    ),
    "pin": (pin, lambda c: post(c, OPS + "unpin", {"environment": "dev"}), "is pinned to"),
}


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        github.require_merge_queue(FULL_NAME, DEV, checks=(QUEUE_CHECK,))
        yield github


@pytest.fixture
def ci(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHubCI]:
    """The daemon, with dev's promotion PR of 1.1.0 waiting in the queue."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state")))
    with TestClient(daemon.app) as client:
        client.runtime = daemon.runtime  # type: ignore[attr-defined]
        robot = GitHubCI(client, fake)
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        robot.check_run(env["proposed"]["hydratedSha"], "ci", "success")
        wait_for(lambda: fake.in_queue(FULL_NAME, env["pullRequest"]["number"]), what="queued")
        yield robot


def calls(fake: FakeGitHub, mutation: str) -> int:
    return sum(1 for c in fake.calls if c.path == "/graphql" and mutation in c.body["query"])


def settle(ci: GitHubCI) -> None:
    runtime = ci.client.runtime  # type: ignore[attr-defined]
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")


@pytest.mark.parametrize("kind", list(STOPS))
def test_a_stop_takes_the_pr_out_of_githubs_queue_and_lifting_it_enqueues_it_once(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo, kind: str
) -> None:
    stop, lift, words = STOPS[kind]
    client, number = ci.client, env_view(ci.client, DEV)["pullRequest"]["number"]
    group = fake.merge_group(FULL_NAME, number)
    stop(client)
    wait_for(lambda: not fake.in_queue(FULL_NAME, number), what="dequeued")
    env = wait_for(
        lambda: ((e := env_view(client, DEV))["mergeQueue"] or {}).get("withdrawn") and e,
        what="the API says so",
    )
    assert env["state"] == "blocked" and words in env["reason"]
    assert f"pull request #{number} is out of the merge queue until every gate" in env["reason"]
    told = wait_for(lambda: fake.comments_of(FULL_NAME, number), what="the PR told")
    assert "took this pull request out of the merge queue" in told[-1] and words in told[-1]
    ci.check_run(group, QUEUE_CHECK, "success")  # the old group's CI passes: out, no merge
    settle(ci)
    assert fake.pull(FULL_NAME, number)["merged_at"] is None
    assert calls(fake, "dequeuePullRequest") == 1

    lift(client)
    wait_for(lambda: fake.in_queue(FULL_NAME, number), what="enqueued again")
    settle(ci)
    assert calls(fake, "enqueuePullRequest") == 2  # once at first, once when lifted
    change = env_view(client, DEV)["proposed"]["drySha"]
    ci.check_run(fake.merge_group(FULL_NAME, number), QUEUE_CHECK, "success")
    wait_for(partial(promoted, client, DEV, change), what="dev promoted by the queue")
    assert calls(fake, "enqueuePullRequest") == 2


def test_a_queue_that_merged_before_the_dequeue_landed_is_a_race_shown_everywhere(
    ci: GitHubCI, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, number = ci.client, env_view(ci.client, DEV)["pullRequest"]["number"]
    refuse = fake._dequeue

    def merged_first(variables: dict[str, Any]) -> Any:
        fake.merge_from_queue(FULL_NAME, number)  # the group's CI passed a moment before
        return refuse(variables)  # and GitHub refuses to dequeue a merged PR

    monkeypatch.setattr(fake, "_dequeue", merged_first)
    freeze(client)
    env = wait_for(
        lambda: (e := env_view(client, DEV))["queueRaces"] and e, what="the race in the API"
    )
    assert env["queueRaces"][0]["pr"] == number and "frozen by" in env["queueRaces"][0]["reason"]
    told = wait_for(lambda: fake.comments_of(FULL_NAME, number), what="the PR told")
    assert "merged this pull request before the promoter could take it out" in told[-1]
    shown = wait_for(
        lambda: (
            "merged from the merge queue while it should have stopped"
            in (e := env_view(client, DEV))["reason"]
            and e
        ),
        what="the reason names the race",
    )
    assert shown["mergeQueue"]["mergedAt"] is not None
