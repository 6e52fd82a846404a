"""GitHub's merge queue found without ``mergeQueue`` in the configuration (daemon, GitHub
plugin, fake GitHub, real git): a branch whose rules include ``merge_queue`` gets its
promotion PR enqueued, a branch without is merged, ``mergeQueue: false`` wins over what the
rules say, and a merge GitHub refuses for want of the queue is enqueued instead, once."""

from __future__ import annotations

from collections.abc import Iterator
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
from .test_merge_queue_e2e import enqueues

DEV = "environment/dev"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(
    genuine: Genuine, gitops: GitOpsRepo, request: pytest.FixtureRequest
) -> Iterator[FakeGitHub]:
    """The fake GitHub; dev's queue (``ruleset``, ``classic``, none) by indirect
    parametrisation, in place before the daemon starts."""
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        queue = getattr(request, "param", None)
        if queue is not None:
            github.require_merge_queue(FULL_NAME, DEV, ruleset=queue == "ruleset")
        yield github


@pytest.fixture
def client(
    fake: FakeGitHub,
    gitops: GitOpsRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[TestClient]:
    """The daemon; dev's entry in the configuration through indirect parametrisation."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    dev = getattr(request, "param", "{branch: environment/dev}")
    text = config_text(gitops.path, tmp_path / "state").replace("{branch: environment/dev}", dev)
    with TestClient(Daemon(parse_config(text)).app) as client:
        wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
        yield client


def ready_to_merge(client: TestClient, fake: FakeGitHub, gitops: GitOpsRepo) -> tuple[int, str]:
    """A change whose dev PR every gate passes: its number and head."""
    ci = GitHubCI(client, fake)
    ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")
    env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
    number, head = env["pullRequest"]["number"], env["proposed"]["hydratedSha"]
    ci.check_run(head, "ci", "success")
    return number, head


def rest_merges(fake: FakeGitHub) -> list[Any]:
    return [c for c in fake.calls if c.method == "PUT" and c.path.endswith("/merge")]


def rule_reads(fake: FakeGitHub, branch: str = DEV) -> int:
    return sum(1 for c in fake.calls if "/rules/branches/" in c.path and c.path.endswith(branch))


@pytest.mark.parametrize("fake", ["ruleset"], indirect=True)
def test_a_branch_whose_rules_include_the_merge_queue_is_enqueued_without_configuring_it(
    fake: FakeGitHub, client: TestClient, gitops: GitOpsRepo
) -> None:
    number, head = ready_to_merge(client, fake, gitops)
    wait_for(lambda: fake.in_queue(FULL_NAME, number), what="the PR enqueued")
    wait_for(
        lambda: "in the merge queue" in env_view(client, DEV)["reason"], what="the queue shown"
    )
    change = gitops.tip("main")
    fake.merge_from_queue(FULL_NAME, number)
    GitHubCI(client, fake).push(DEV, None, gitops.tip(DEV))
    wait_for(partial(promoted, client, DEV, change), what="dev promoted by the queue")
    assert [v["head"] for v in enqueues(fake)] == [head]
    assert rest_merges(fake) == []


def test_a_branch_without_a_merge_queue_rule_is_merged_and_its_rules_read_once(
    client: TestClient, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    change_before = env_view(client, DEV)["active"]["drySha"]
    ready_to_merge(client, fake, gitops)
    wait_for(lambda: env_view(client, DEV)["active"]["drySha"] != change_before, what="dev merged")
    assert len(rest_merges(fake)) == 1
    assert enqueues(fake) == []
    assert rule_reads(fake) == 1


@pytest.mark.parametrize("fake", ["ruleset"], indirect=True)
@pytest.mark.parametrize("client", ["{branch: environment/dev, mergeQueue: false}"], indirect=True)
def test_merge_queue_false_in_the_configuration_wins_over_the_branchs_rules(
    fake: FakeGitHub, client: TestClient, gitops: GitOpsRepo
) -> None:
    ready_to_merge(client, fake, gitops)
    refused = wait_for(
        lambda: "through the merge queue" in (e := env_view(client, DEV))["reason"] and e,
        what="GitHub's refusal shown",
    )
    assert refused["state"] == "error"
    assert enqueues(fake) == []
    assert rule_reads(fake) == 0


@pytest.mark.parametrize("fake", ["classic"], indirect=True)
def test_a_merge_refused_for_want_of_the_queue_is_enqueued_instead_once(
    fake: FakeGitHub, client: TestClient, gitops: GitOpsRepo
) -> None:
    number, head = ready_to_merge(client, fake, gitops)
    wait_for(lambda: fake.in_queue(FULL_NAME, number), what="the PR enqueued")
    wait_for(
        lambda: "in the merge queue" in env_view(client, DEV)["reason"], what="the queue shown"
    )
    assert [c.status for c in rest_merges(fake)] == [405]
    assert [v["head"] for v in enqueues(fake)] == [head]
    assert rule_reads(fake) == 1
