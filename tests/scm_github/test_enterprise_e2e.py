"""GitHub Enterprise Server end to end (daemon, GitHub plugin, the fake at a GHES URL, real
git): REST under ``/api/v3``, GraphQL at ``/api/graphql``. A branch that merges through the
queue is enqueued through GHES's GraphQL endpoint and merged by the queue; on an instance
without the merge queue, the environment that asks for it says so, alone."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, wait_for

from .conftest import TOKEN, TOKEN_ENV
from .fake_github import FakeGitHub
from .genuine import Genuine
from .test_end_to_end import FULL_NAME, SECRET, SECRET_ENV, GitHubCI, config_text, env_view
from .test_end_to_end import promoted as promoted_to

GHES = "https://ghe.example.test/api/v3"
DEV, STAGING, PROD = "environment/dev", "environment/staging", "environment/prod"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(
        genuine, base_url=GHES, html_url="https://ghe.example.test", tokens=(TOKEN,)
    ) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


def enterprise(text: str, dev: str = "{branch: environment/dev}") -> str:
    """The end-to-end configuration on GitHub Enterprise Server, dev's entry as given."""
    text = text.replace("github: {token:", f"github: {{url: '{GHES}', token:").replace(
        "{branch: environment/dev}", dev
    )
    return text


@pytest.fixture
def daemon_for(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[partial[Daemon]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    base = config_text(gitops.path, tmp_path / "state")
    yield partial(lambda dev: Daemon(parse_config(enterprise(base, dev))))


def test_on_github_enterprise_a_queued_branch_is_enqueued_through_api_graphql(
    fake: FakeGitHub, gitops: GitOpsRepo, daemon_for: partial[Daemon]
) -> None:
    fake.require_merge_queue(FULL_NAME, DEV)
    with TestClient(daemon_for("{branch: environment/dev}").app) as client:
        ci = GitHubCI(client, fake)
        change = ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        number, head = env["pullRequest"]["number"], env["proposed"]["hydratedSha"]
        ci.check_run(head, "ci", "success")
        wait_for(lambda: fake.in_queue(FULL_NAME, number), what="the PR enqueued")
        fake.merge_from_queue(FULL_NAME, number)
        wait_for(partial(promoted_to, client, DEV, change), what="dev promoted by the queue")
    graphql = [c for c in fake.calls if c.method == "POST" and c.path == "/graphql"]
    assert graphql and all(c.status == 200 for c in graphql)
    assert not [c for c in fake.calls if c.status == 404]


def test_an_enterprise_without_the_merge_queue_says_so_on_that_environment_alone(
    fake: FakeGitHub, gitops: GitOpsRepo, daemon_for: partial[Daemon]
) -> None:
    fake.merge_queue_available = False
    with TestClient(daemon_for("{branch: environment/dev, mergeQueue: true}").app) as client:
        ci = GitHubCI(client, fake)
        wait_for(lambda: env_view(client, PROD).get("state") == "up-to-date", what="the start")
        ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
        said = "merge queue not available on this GitHub Enterprise"
        dev = wait_for(
            lambda: said in str((e := env_view(client, DEV)).get("reason")) and e,
            what="dev to name what the instance lacks",
        )
        assert "enqueuePullRequest" in dev["reason"]
        for branch in (STAGING, PROD):
            other = env_view(client, branch)
            assert said not in str(other), other
            assert not other.get("error"), other
