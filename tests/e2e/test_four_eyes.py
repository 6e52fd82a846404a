"""Four eyes end to end on the local SCM: the change's author and the PR's opener never approve."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.e2e.test_gates import run_daemon, to_staging
from tests.e2e.test_local_promotion import active_dry, env_view
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, wait_for


@pytest.fixture
def approving(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    """Each approver has a token of their own; this machine's caller without one is the
    local admin that sets the statuses."""
    people = {name: ["role: approver"] for name in ("author", "promoter", "grace")}
    access = access_yaml(tmp_path / "tokens", people, anonymous="admin")
    yield from run_daemon(gitops, tmp_path, "gates: [{approval: {count: 1}}]", access=access)


def approve(client: TestClient, user: str) -> None:
    answer = client.post(
        "/api/v1/strategies/guestbook/approve",
        json={"environment": "prod"},
        headers=bearer(user),
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["user"] == user


def test_an_approval_by_the_author_of_the_change_or_the_promoter_does_not_merge_it(
    approving: TestClient, gitops: GitOpsRepo
) -> None:
    # The suite's git identity, Test Author <author@example.invalid>, writes every dry commit.
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    to_staging(approving, gitops, change)
    approve(approving, "author")  # the author of the change, by the login in their e-mail
    approve(approving, "promoter")  # the local SCM's PR author: the promoter itself
    reason = "not counted: author wrote a change being promoted; promoter opened the pull request"
    prod = wait_for(
        lambda: (e := env_view(approving, "environment/prod"))["reason"].count(reason) and e,
        what="prod to say which approvals do not count",
    )
    assert "waiting for 1 approval (0 so far;" in prod["reason"]
    assert active_dry(approving, "environment/prod") != change
    approve(approving, "grace")
    wait_for(lambda: active_dry(approving, "environment/prod") == change, what="the merge")
