"""GitHub deployments end to end (daemon, GitHub plugin, fake GitHub, real git): a
deployment's whole life through a revert, and a status for a deployment GitHub lost."""

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

STAGING = "environment/staging"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


@pytest.fixture
def ci(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitHubCI]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    text = (
        config_text(gitops.path, tmp_path / "state")
        .replace(
            "    environments:\n",
            "    deployments: {url: https://guestbook.example.com}\n    environments:\n",
        )
        .replace(
            "- {branch: environment/staging}",
            "- {branch: environment/staging, autoRevert: {enabled: true, settleTime: 0s,"
            " autoMerge: true}}",
        )
    )
    daemon = Daemon(parse_config(text))
    with TestClient(daemon.app) as client:
        client.runtime = daemon.runtime  # type: ignore[attr-defined]
        robot = GitHubCI(client, fake)
        for branch in ENVIRONMENTS:
            robot.status(gitops.tip(branch), "health")
        yield robot


def states(fake: FakeGitHub, environment: str) -> list[list[str]]:
    return fake.states_of(FULL_NAME, environment)


def promote(ci: GitHubCI, gitops: GitOpsRepo, branch: str, change: str, health: str) -> None:
    env = wait_for(
        lambda: (
            (e := env_view(ci.client, branch)).get("pullRequest")
            and e["proposed"]["drySha"] == change
            and e
        ),
        what=f"the PR of {branch}",
    )
    ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
    wait_for(partial(promoted, ci.client, branch, change), what=f"{branch} promoted")
    ci.status(gitops.tip(branch), "health", health)


def test_a_deployment_lives_from_merge_to_green_and_a_bad_one_fails_and_is_reverted(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    # Turned on: what each environment runs is reported, green once its health is.
    wait_for(lambda: states(fake, "staging") == [["in_progress", "success"]], what="first")
    good = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS[:2]:
        promote(ci, gitops, branch, good, "success")
    wait_for(
        lambda: (
            states(fake, "staging")
            == [["in_progress", "success", "inactive"], ["in_progress", "success"]]
        ),
        what="the promotion's deployment green, the one before inactive",
    )
    promoted_by = fake.deployments[FULL_NAME][-1]
    pr = next(p for p in fake.pulls_of(FULL_NAME) if p["base"]["ref"] == STAGING)
    assert promoted_by["sha"] == gitops.tip(STAGING)
    assert f"#{pr['number']}" in promoted_by["description"]
    last = fake.deployment_statuses[promoted_by["id"]][0]
    assert last["log_url"] == pr["html_url"]  # linked back to the promotion PR
    assert last["environment_url"] == "https://guestbook.example.com"

    bad = gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    promote(ci, gitops, "environment/dev", bad, "success")
    promote(ci, gitops, STAGING, bad, "failure")
    wait_for(lambda: env_view(ci.client, STAGING)["active"]["drySha"] == good, what="reverted")
    ci.status(gitops.tip(STAGING), "health", "success")
    wait_for(
        lambda: (
            states(fake, "staging")[-2:] == [["in_progress", "failure"], ["in_progress", "success"]]
        ),
        what="the bad deployment failed, the revert's green",
    )
    assert states(fake, "staging")[1][-1] == "inactive"
    revert_pr = next(
        p for p in fake.pulls_of(FULL_NAME) if "revert" in [lb["name"] for lb in p["labels"]]
    )
    assert (
        fake.deployment_statuses[fake.deployments[FULL_NAME][-1]["id"]][0]["log_url"]
        == (revert_pr["html_url"])
    )


def test_a_status_for_a_deployment_github_no_longer_has_is_not_asked_again(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    wait_for(lambda: states(fake, "dev") == [["in_progress", "success"]], what="dev reported")
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    env = wait_for(
        lambda: (
            env_view(ci.client, "environment/dev").get("pullRequest")
            and env_view(ci.client, "environment/dev")
        ),
        what="PR",
    )
    ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
    wait_for(partial(promoted, ci.client, "environment/dev", change), what="dev promoted")
    wait_for(lambda: len(states(fake, "dev")) == 2, what="the new deployment")
    fake.deployments[FULL_NAME] = [
        d
        for d in fake.deployments[FULL_NAME]
        if d["environment"] != "dev" or d["sha"] != gitops.tip("environment/dev")
    ]  # a person deleted it
    mark = len(fake.calls)
    ci.status(gitops.tip("environment/dev"), "health")
    runtime = ci.client.runtime  # type: ignore[attr-defined]
    wait_for(
        lambda: [c for c in fake.calls[mark:] if c.path.endswith("/statuses") and c.status == 404],
        what="GitHub's 404",
    )
    for _ in range(3):
        runtime.reconciler.reconcile("guestbook")
    gone = [c for c in fake.calls[mark:] if "/deployments/" in c.path and c.status == 404]
    assert len(gone) == 1  # recorded as gone, not asked again
    assert env_view(ci.client, "environment/dev")["state"] == "up-to-date"


def test_on_a_merge_queue_branch_the_deployment_links_to_the_promotion_pr(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    fake.require_merge_queue(FULL_NAME, "environment/dev")
    text = config_text(gitops.path, tmp_path / "state").replace(
        "    environments:\n", "    deployments: {}\n    environments:\n"
    )
    with TestClient(Daemon(parse_config(text)).app) as client:
        ci = GitHubCI(client, fake)
        wait_for(lambda: states(fake, "dev") == [["in_progress"]], what="dev reported")
        change = ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(
            lambda: (e := env_view(client, "environment/dev")).get("pullRequest") and e,
            what="the dev PR",
        )
        number = env["pullRequest"]["number"]
        ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
        wait_for(lambda: fake.in_queue(FULL_NAME, number), what="the PR enqueued")
        fake.merge_from_queue(FULL_NAME, number)  # the queue merges it, not the promoter
        wait_for(partial(promoted, client, "environment/dev", change), what="dev promoted")
        wait_for(lambda: len(states(fake, "dev")) == 2, what="the queue's merge reported")
    deployment = fake.deployments[FULL_NAME][-1]
    assert deployment["sha"] == gitops.tip("environment/dev")
    assert f"#{number}" in deployment["description"]
    [status] = fake.deployment_statuses[deployment["id"]]
    assert status["log_url"] == fake.pull(FULL_NAME, number)["html_url"]
