"""On a token with a small budget, calls wait for it instead of being refused, and the
change still goes dev → staging → prod.

The fake GitHub enforces the limits as GitHub does (a 403 once the hour's budget is
spent, a secondary-limit 403 past the points or writes of a minute); time runs fast
(an hour of 6 s, a minute of 1 s) in the fake and in the promoter's budget alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from scm_plugins.limiter import Budget, RateBudget
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
    wait_pr,
)

TIGHT = Budget(
    per_window=60,
    window=6.0,
    minute=1.0,
    points_per_minute=20,
    writes_per_minute=3,
    writes_per_hour=30,
)


@pytest.fixture
def repo(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def hub(genuine: Genuine, repo: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,), rate_limit=TIGHT.per_window) as github:
        github.add_repository(FULL_NAME, repo.path)
        github.window, github.reset_at = TIGHT.window, time.time() + TIGHT.window
        github.enforce = TIGHT
        yield github


def test_a_tight_budget_slows_the_promotion_down_and_github_refuses_nothing(
    hub: FakeGitHub, repo: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    daemon = Daemon(parse_config(config_text(repo.path, tmp_path / "state", poll_interval="1h")))
    daemon.runtime.plugins["github"]._client.budget = RateBudget(TIGHT)
    with TestClient(daemon.app) as client:
        wait_for(
            lambda: env_view(client, "environment/prod").get("state") == "up-to-date",
            timeout=60,
        )
        ci = GitHubCI(client, hub)
        for branch in ENVIRONMENTS:
            ci.status(repo.tip(branch), "health")
        change = ci.hydrate(repo, "1.1.0", "Bump guestbook to 1.1.0")
        for branch in ENVIRONMENTS:
            head = wait_pr(client, branch)["proposed"]["hydratedSha"]
            ci.check_run(head, "ci", "success")
            wait_for(partial(promoted, client, branch, change), timeout=60, what=branch)
            ci.status(repo.tip(branch), "health")
    assert hub.refused == {"primary": 0, "secondary": 0}
    writes = [c for c in hub.calls if c.method != "GET" and c.authorization == f"token {TOKEN}"]
    assert len(writes) > TIGHT.writes_per_minute  # the limits did bind: calls were spread
