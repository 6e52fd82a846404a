"""Reviewer requests on GitHub end to end (daemon, GitHub plugin, fake GitHub, real git):
the environment's reviewers are requested on its promotion PR once, not again when the PR
is updated by a newer change; whose approval would not count (the PR's author) is left out
up front, GitHub's refusal of one name leaves the others asked, and who could not be asked
is told on the PR, once; nothing is asked again in a loop."""

from __future__ import annotations

from collections.abc import Iterator
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

DEV = "environment/dev"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


def daemon(gitops: GitOpsRepo, tmp_path: Path, reviewers: str) -> Daemon:
    text = config_text(gitops.path, tmp_path / "state").replace(
        "- {branch: environment/dev}", f"- {{branch: environment/dev, reviewers: {reviewers}}}"
    )
    return Daemon(parse_config(text))


def test_reviewers_are_requested_once_not_on_every_update(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    built = daemon(gitops, tmp_path, "{users: [ada], teams: [acme/sre]}")
    with TestClient(built.app) as client:
        GitHubCI(client, fake)
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        pr = wait_for(lambda: env_view(client, DEV).get("pullRequest"), what="the dev PR")
        wait_for(lambda: fake.review_requests, what="the review request")
        newer = gitops.change("1.2.0", "Bump guestbook to 1.2.0")  # the PR is updated...
        wait_for(
            lambda: newer[:7] in fake.pull(FULL_NAME, pr["number"])["title"],
            what="the PR updated for the newer change",
        )
        for _ in range(2):
            built.runtime.reconciler.reconcile("guestbook")
    assert fake.review_requests == [(pr["number"], ("ada",), ("sre",))]  # ...and not asked again
    stored = fake.pull(FULL_NAME, pr["number"])
    assert [u["login"] for u in stored["requested_reviewers"]] == ["ada"]
    assert [t["slug"] for t in stored["requested_teams"]] == ["sre"]


def test_the_prs_author_is_not_asked_and_the_pr_says_so_once(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    built = daemon(gitops, tmp_path, "{users: [octocat]}")  # the PRs' author: GitHub says 422
    with TestClient(built.app) as client:
        GitHubCI(client, fake)
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        pr = wait_for(lambda: env_view(client, DEV).get("pullRequest"), what="the dev PR")
        wait_for(lambda: fake.comments_of(FULL_NAME, pr["number"]), what="the PR told")
        for _ in range(3):
            built.runtime.reconciler.reconcile("guestbook")
        requested = [c for c in fake.calls if c.path.endswith("/requested_reviewers")]
        comments = fake.comments_of(FULL_NAME, pr["number"])
    assert requested == []  # known to be refused: not asked at all
    assert comments == [
        "The promoter could not ask for a review from: octocat (opened the pull request)."
    ]


def test_one_refused_reviewer_leaves_the_others_asked_and_the_pr_names_who_was_not(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    fake.collaborators = {"ada", "grace", "octocat"}  # bob is not one: GitHub refuses him
    built = daemon(gitops, tmp_path, "{users: [ada, octocat, bob, grace]}")
    with TestClient(built.app) as client:
        GitHubCI(client, fake)
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        pr = wait_for(lambda: env_view(client, DEV).get("pullRequest"), what="the dev PR")
        wait_for(lambda: fake.comments_of(FULL_NAME, pr["number"]), what="the PR told")
        for _ in range(3):
            built.runtime.reconciler.reconcile("guestbook")
        stored = fake.pull(FULL_NAME, pr["number"])
        [comment] = fake.comments_of(FULL_NAME, pr["number"])
        refused = [c for c in fake.calls if c.path.endswith("/requested_reviewers")]
    assert [u["login"] for u in stored["requested_reviewers"]] == ["ada", "grace"]
    assert comment.startswith(
        "The promoter could not ask for a review from: octocat (opened the pull request);"
        " bob (refused: "
    )
    assert "not a collaborator" in comment
    assert [c.status for c in refused] == [422, 201, 422, 201]  # all at once, then one by one
