"""The GitHub plugin spends its credential's budget without meeting GitHub's limits."""

from __future__ import annotations

import time
from pathlib import Path

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmRateLimited
from promoter.models import CommitStatus, Phase
from scm_plugins.github import GitHubScm
from scm_plugins.github.limits import GITHUB_LIMITS
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, scm_calls
from .fake_github import FakeGitHub
from .fake_limits import FakeLimits, RateLimits
from .genuine import Genuine

HOUR = 1.5
"""GitHub's hour, scaled: every limit of the fake and of the plugin runs 2,400 times faster."""


def test_calls_past_the_primary_limit_wait_for_room_and_github_never_refuses_one(
    fake: FakeGitHub,
    genuine: Genuine,
    sandbox: GitSandbox,
    repo: Repository,
    token_provider: ScmProvider,
    tmp_path: Path,
) -> None:
    fake.rate_limits = RateLimits(FakeLimits(primary=20).scaled(HOUR), genuine)
    plugin = GitHubScm(
        provider=token_provider, state_dir=str(tmp_path), limits=GITHUB_LIMITS.scaled(HOUR)
    )
    sha = sandbox.branch_sha("environment/dev") or ""
    throttled = scm_calls(outcome="throttled")
    started = time.monotonic()
    for i in range(40):
        status = CommitStatus(key=f"check-{i}", phase=Phase.SUCCESS)
        while True:
            try:
                plugin.set_commit_status(repo=repo, sha=sha, status=status)
                break
            except ScmRateLimited as exc:  # the queue would hold the strategy this long
                time.sleep(exc.retry_after)
    plugin.close()
    assert time.monotonic() - started >= HOUR  # 40 writes, 20 an hour: a reset at least
    assert fake.rate_limits.hits == []
    assert [c.status for c in fake.calls] == [201] * 40
    assert len(fake.repositories[FULL_NAME.lower()].statuses[sha]) == 40
    assert scm_calls(outcome="throttled") > throttled
