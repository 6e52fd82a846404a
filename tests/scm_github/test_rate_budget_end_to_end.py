"""On a token with a small budget, calls wait for it instead of being refused, and the
change still goes dev → staging → prod.

The fake GitHub enforces GitHub's limits as GitHub does (a 403 once the hour's budget
is spent, a secondary-limit 403 past the points or content-creating requests of a
minute or an hour); time runs 1,800 times faster (an hour of 2 s) in the fake and in
the plugin's budget alike.
"""

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
PRIMARY, CONTENT = 16, 4
"""16 requests and 4 content-creating ones an hour: a promotion needs several hours."""


@pytest.fixture
def repo(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def hub(genuine: Genuine, repo: GitOpsRepo) -> Iterator[FakeGitHub]:
    limits = FakeLimits(primary=PRIMARY, content_per_hour=CONTENT).scaled(HOUR)
    with FakeGitHub(genuine, tokens=(TOKEN,), limits=limits) as github:
        github.add_repository(FULL_NAME, repo.path)
        yield github


@pytest.fixture
def daemon(
    hub: FakeGitHub, repo: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Daemon, GitHubScm]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    config = parse_config(config_text(repo.path, tmp_path / "state"))
    limits = replace(GITHUB_LIMITS, primary=PRIMARY, content_per_window=CONTENT).scaled(HOUR)
    plugin = GitHubScm(
        provider=config.scm_providers[0], state_dir=str(tmp_path / "state"), limits=limits
    )
    yield Daemon(config, plugins={"github": plugin}), plugin
    plugin.close()


def test_a_tight_budget_slows_the_promotion_down_and_github_refuses_nothing(
    daemon: tuple[Daemon, GitHubScm], hub: FakeGitHub, repo: GitOpsRepo
) -> None:
    app, plugin = daemon
    throttled = scm_calls(outcome="throttled")
    with TestClient(app.app) as client:
        wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
        ci = GitHubCI(client, hub)
        for branch in ENVIRONMENTS:
            ci.status(repo.tip(branch), "health")
        change = repo.change("1.1.0", "Bump guestbook to 1.1.0")
        promote_through(ci, repo, change)
    assert hub.rate_limits.hits == []
    assert not [c for c in hub.calls if c.status in (403, 429)]
    assert hub.charged() > PRIMARY  # it took more than an hour's budget...
    budget = plugin.calls.budget
    assert budget is not None
    waited = budget.stats.waited + (scm_calls(outcome="throttled") - throttled)
    assert waited > 0  # ...waited for, never refused
    merges = [c for c in hub.calls if c.method == "PUT" and c.path.endswith("/merge")]
    assert [c.status for c in merges] == [200] * len(ENVIRONMENTS)
