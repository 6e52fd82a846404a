"""End to end on a small GitHub budget: the daemon's calls wait for room instead of failing,
GitHub never refuses one, and the change still goes dev → staging → prod."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from scm_plugins.github import GitHubScm
from scm_plugins.github.limits import GITHUB_LIMITS
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import TOKEN, TOKEN_ENV, scm_calls
from .fake_github import FakeGitHub
from .fake_limits import FakeLimits
from .genuine import Genuine
from .test_end_to_end import (
    FULL_NAME,
    SECRET,
    SECRET_ENV,
    GitHubCI,
    config_text,
    env_view,
    promote_through,
)

HOUR = 2.0
"""GitHub's hour, scaled 1,800 times: the fake's limits and the plugin's alike."""
PRIMARY, CONTENT = 16, 4
"""16 requests and 4 content-creating ones an hour: a promotion needs several hours."""


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    limits = FakeLimits(primary=PRIMARY, content_per_hour=CONTENT).scaled(HOUR)
    with FakeGitHub(genuine, tokens=(TOKEN,), limits=limits) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


@pytest.fixture
def daemon(
    fake: FakeGitHub, gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Daemon, GitHubScm]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    config = parse_config(config_text(gitops.path, tmp_path / "state"))
    limits = replace(GITHUB_LIMITS, primary=PRIMARY, content_per_window=CONTENT).scaled(HOUR)
    plugin = GitHubScm(
        provider=config.scm_providers[0], state_dir=str(tmp_path / "state"), limits=limits
    )
    yield Daemon(config, plugins={"github": plugin}), plugin
    plugin.close()


def test_calls_past_a_small_budget_wait_and_the_change_still_reaches_prod(
    daemon: tuple[Daemon, GitHubScm], fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    app, plugin = daemon
    throttled = scm_calls(outcome="throttled")
    with TestClient(app.app) as client:
        wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
        ci = GitHubCI(client, fake)
        for branch in ENVIRONMENTS:
            ci.status(gitops.tip(branch), "health")
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        promote_through(ci, gitops, change)
    assert fake.rate_limits.hits == []
    assert not [c for c in fake.calls if c.status in (403, 429)]
    assert fake.charged() > PRIMARY  # it took more than an hour's budget...
    budget = plugin.calls.budget
    assert budget is not None
    waited = budget.stats.waited + (scm_calls(outcome="throttled") - throttled)
    assert waited > 0  # ...waited for, never refused
    merges = [c for c in fake.calls if c.method == "PUT" and c.path.endswith("/merge")]
    assert [c.status for c in merges] == [200] * len(ENVIRONMENTS)
