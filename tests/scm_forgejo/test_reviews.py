"""Forgejo reviews for the approval gate (promoter.scm/v1.1 ``pullRequests/reviews``), and four
eyes: the PR's opener and the change's author never approve it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import ExternalPlugin, Repository, ScmProvider, parse_config
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from scm_plugins.forgejo import convert
from scm_plugins.forgejo.plugin import ForgejoScm
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FIXTURES, FakeForgejo
from .test_end_to_end import config_text, env_view, promoted, set_status

GENUINE = json.loads((FIXTURES / "rest" / "gitea-reviews.json").read_text())[0]


def genuine(**fields: Any) -> dict[str, Any]:
    """The genuine review with ``fields`` changed (its own state is PENDING)."""
    return {**GENUINE, **fields}


def test_a_pending_review_decides_nothing_and_an_approval_names_its_author_and_head() -> None:
    assert convert.review(GENUINE) is None
    approved = convert.review(genuine(state="APPROVED"))
    assert approved is not None
    assert (approved.user, approved.approved, approved.commit_sha) == (
        "jcitizen",
        True,
        "5c23b301e7eb47aa83de90cf08e0a75b4c0906c8",
    )
    changes = convert.review(genuine(state="REQUEST_CHANGES"))
    assert changes is not None and changes.approved is False
    dismissed = convert.review(genuine(state="APPROVED", dismissed=True))
    assert dismissed is not None and dismissed.approved is False
    assert convert.review(genuine(state="COMMENT")) is None


def test_the_plugin_reads_reviews_oldest_first_and_the_pull_requests_opener(
    forgejo: FakeForgejo, bare: Path
) -> None:
    GitOpsRepo(bare).change("1.1.0", "Bump")
    repo = Repository(name="gitops", url=str(bare), scm_provider="forgejo", path=FULL_NAME)
    plugin = ForgejoScm(url=forgejo.url, token=TOKEN)
    pr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    assert pr.author == "promoter-bot"
    forgejo.review(FULL_NAME, pr.number, "ada")
    forgejo.review(FULL_NAME, pr.number, "ada", state="REQUEST_CHANGES")
    forgejo.review(FULL_NAME, pr.number, "grace")
    found = plugin.get_reviews(repo=repo, number=pr.number)
    assert [(r.user, r.approved) for r in found] == [("ada", True), ("ada", False), ("grace", True)]
    assert {r.commit_sha for r in found} == {pr.head_sha}


def test_reviews_and_the_opener_cross_the_plugin_protocol(
    forgejo: FakeForgejo, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    GitOpsRepo(bare).change("1.1.0", "Bump")
    spec = ExternalPlugin.model_validate(
        {
            "name": "forgejo",
            "directory": str(BIN),
            "settings": {"url": forgejo.url},
            "secrets": {"token": {"fromEnv": TOKEN_ENV}},
        }
    )
    host = ExternalScm(provider=ScmProvider(name="forgejo", plugin=spec), state_dir=str(tmp_path))
    repo = Repository(name="gitops", url=str(bare), scm_provider="forgejo", path=FULL_NAME)
    try:
        assert host.reads_reviews is True
        pr = host.open_pull_request(
            repo=repo,
            head="environment/dev-next",
            base="environment/dev",
            title="t",
            body="",
            labels=(),
        )
        assert pr.author == "promoter-bot"
        forgejo.review(FULL_NAME, pr.number, "grace")
        [review] = host.get_reviews(repo=repo, number=pr.number, teams=["acme/sre"])
        assert (review.user, review.approved, review.teams) == ("grace", True, ())
    finally:
        host.close()


@pytest.fixture
def approving(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, FakeForgejo]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, gitops.path)
        text = config_text(gitops.path, tmp_path / "state", fake.url).replace(
            "- {branch: environment/prod}",
            "- {branch: environment/prod, gates: [{approval: {count: 1}}]}",
        )
        daemon = Daemon(parse_config(text))
        with TestClient(daemon.app) as client:
            wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
            for branch in ENVIRONMENTS:
                set_status(client, gitops.tip(branch), "health")
            yield client, fake


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


def test_on_forgejo_neither_the_opener_nor_the_author_of_the_change_approves_it(
    approving: tuple[TestClient, FakeForgejo], gitops: GitOpsRepo
) -> None:
    client, fake = approving
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")  # by Test Author <author@...>
    for branch in ENVIRONMENTS:
        env = wait_for(lambda b=branch: (e := env_view(client, b)).get("pullRequest") and e)
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        if branch == "environment/prod":
            break
        wait_for(partial(promoted, client, branch, change), what=f"{branch} promoted")
        set_status(client, gitops.tip(branch), "health")
    number = env["pullRequest"]["number"]
    fake.review(FULL_NAME, number, "promoter-bot")
    fake.review(FULL_NAME, number, "author")
    client.post("/api/v1/refresh", json={"strategy": "guestbook"})
    expected = "not counted: author wrote a change being promoted; promoter-bot opened"
    wait_for(
        lambda: expected in env_view(client, "environment/prod")["reason"],
        what="prod to leave out the opener's and the author's approvals",
    )
    assert not promoted(client, "environment/prod", change)
    fake.review(FULL_NAME, number, "grace")
    client.post("/api/v1/refresh", json={"strategy": "guestbook"})
    wait_for(partial(promoted, client, "environment/prod", change), what="prod promoted")


def test_on_forgejo_a_co_author_named_right_under_the_body_does_not_approve_it(
    approving: tuple[TestClient, FakeForgejo], gitops: GitOpsRepo
) -> None:
    client, fake = approving
    message = (
        "Bump guestbook to 1.1.0\n\nPaired on the rollout.\nCo-authored-by: Bob <bob@example.com>"
    )
    change = gitops.change("1.1.0", message)  # the trailer right under the body, no blank line
    for branch in ENVIRONMENTS:
        env = wait_for(lambda b=branch: (e := env_view(client, b)).get("pullRequest") and e)
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        if branch == "environment/prod":
            break
        wait_for(partial(promoted, client, branch, change), what=f"{branch} promoted")
        set_status(client, gitops.tip(branch), "health")
    number = env["pullRequest"]["number"]
    fake.review(FULL_NAME, number, "bob")
    client.post("/api/v1/refresh", json={"strategy": "guestbook"})
    wait_for(
        lambda: (
            "not counted: bob wrote a change being promoted"
            in env_view(client, "environment/prod")["reason"]
        ),
        what="prod to leave out the co-author's approval",
    )
    assert not promoted(client, "environment/prod", change)
