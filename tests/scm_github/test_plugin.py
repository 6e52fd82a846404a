"""The plugin as the registry builds it, its calls per promotion, and concurrent use."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from promoter.config import Repository, ScmProvider
from promoter.models import CommitStatus, Phase, PullRequestState
from scm_plugins.github import GitHubScm
from scm_plugins.protocol import ScmPlugin
from scm_plugins.registry import build_plugin
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, scm_calls
from .fake_github import FakeGitHub

DEV, DEV_NEXT = "environment/dev", "environment/dev-next"


def test_the_registry_builds_the_github_plugin(token_provider: ScmProvider, tmp_path: Path) -> None:
    plugin = build_plugin(token_provider, state_dir=str(tmp_path))
    try:
        assert isinstance(plugin, GitHubScm)
        assert isinstance(plugin, ScmPlugin)
        assert plugin.name == "github"
    finally:
        plugin.close()


def promote(plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox) -> str:
    """What the reconciler asks for one environment, from opening the PR to the merge."""
    pr = plugin.open_pull_request(
        repo=repo,
        head=DEV_NEXT,
        base=DEV,
        title="Promote to environment/dev",
        body="Promotes dry commit abc1234.",
        labels=("promotion", "environment/dev"),
    )
    fake.post_check_run(FULL_NAME, pr.head_sha, "ci", "completed", "success")  # CI, not us
    plugin.set_commit_status(
        repo=repo,
        sha=pr.head_sha,
        status=CommitStatus(key="promoter/previous-environment", phase=Phase.SUCCESS),
    )
    gates = plugin.get_commit_statuses(repo=repo, sha=pr.head_sha)
    assert {g.key: g.phase for g in gates} == {
        "ci": Phase.SUCCESS,
        "promoter/previous-environment": Phase.SUCCESS,
    }
    return plugin.merge_pull_request(
        repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="Promote"
    )


def test_one_environment_promotion_costs_five_calls_from_opening_to_merging(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    before = scm_calls()
    merged = promote(plugin, repo, fake, sandbox)
    assert sandbox.branch_sha(DEV) == merged
    assert scm_calls() - before == 5  # the head's gates in one GraphQL read
    assert fake.charged() == 5
    assert [c.path for c in fake.calls if c.path == "/graphql"] == ["/graphql"]


def test_an_idle_resync_of_an_open_pull_request_spends_no_rate_limit(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    pr = plugin.open_pull_request(
        repo=repo, head=DEV_NEXT, base=DEV, title="t", body="b", labels=()
    )
    plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)
    plugin.get_commit_statuses(repo=repo, sha=pr.head_sha)  # the first read: GraphQL
    plugin.get_commit_statuses(repo=repo, sha=pr.head_sha)  # REST, remembered by ETag
    charged = fake.charged()
    for _ in range(3):
        found = plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)
        assert found is not None and found.state is PullRequestState.OPEN
        plugin.get_commit_statuses(repo=repo, sha=pr.head_sha)
    assert fake.charged() == charged


def test_worker_threads_can_share_one_plugin(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    sha = sandbox.branch_sha(DEV_NEXT) or ""
    fake.post_status(FULL_NAME, sha, "ci", "success")

    def work(i: int) -> int:
        plugin.set_commit_status(
            repo=repo, sha=sha, status=CommitStatus(key=f"k{i % 4}", phase=Phase.SUCCESS)
        )
        return len(plugin.get_commit_statuses(repo=repo, sha=sha))

    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = list(pool.map(work, range(64)))
    assert all(count >= 2 for count in counts)
    assert len(plugin.get_commit_statuses(repo=repo, sha=sha)) == 5
