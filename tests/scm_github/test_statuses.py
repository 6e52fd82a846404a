"""Gates read from GitHub (statuses and check runs) and the promoter's own gates written to it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from promoter.config import Repository, ScmProvider
from promoter.models import CommitStatus, Phase
from scm_plugins.github import GitHubScm
from scm_plugins.github.contexts import from_check_run, from_status
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, scm_calls
from .fake_github import FakeGitHub
from .genuine import Genuine


@pytest.fixture
def sha(sandbox: GitSandbox) -> str:
    return sandbox.branch_sha("environment/dev-next") or ""


def phases(plugin: GitHubScm, repo: Repository, sha: str) -> dict[str, Phase]:
    return {s.key: s.phase for s in plugin.get_commit_statuses(repo=repo, sha=sha)}


@pytest.mark.parametrize(
    ("state", "phase"),
    [("success", "success"), ("pending", "pending"), ("failure", "failure"), ("error", "failure")],
)
def test_commit_status_states_are_normalised(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str, state: str, phase: str
) -> None:
    fake.post_status(FULL_NAME, sha, "ci/jenkins", state, description="d", target_url="https://x")
    [status] = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert (status.key, status.phase.value, status.description, status.url) == (
        "ci/jenkins",
        phase,
        "d",
        "https://x",
    )
    assert status.source == "github/status"


@pytest.mark.parametrize(
    ("status", "conclusion", "phase"),
    [
        ("completed", "success", "success"),
        ("completed", "neutral", "success"),
        ("completed", "skipped", "success"),
        ("queued", None, "pending"),
        ("in_progress", None, "pending"),
        ("completed", "failure", "failure"),
        ("completed", "cancelled", "failure"),
        ("completed", "timed_out", "failure"),
        ("completed", "action_required", "failure"),
        ("completed", "stale", "failure"),
    ],
)
def test_check_runs_are_normalised_so_a_workflow_name_can_be_a_gate_key(
    plugin: GitHubScm,
    repo: Repository,
    fake: FakeGitHub,
    sha: str,
    status: str,
    conclusion: str | None,
    phase: str,
) -> None:
    fake.post_check_run(FULL_NAME, sha, "build-and-test", status, conclusion)
    assert phases(plugin, repo, sha) == {"build-and-test": Phase(phase)}


def test_the_latest_check_run_per_name_wins(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.post_check_run(FULL_NAME, sha, "e2e", "completed", "failure")
    fake.post_check_run(FULL_NAME, sha, "e2e", "completed", "success")
    fake.post_status(FULL_NAME, sha, "lint", "failure")
    fake.post_status(FULL_NAME, sha, "lint", "success")
    assert phases(plugin, repo, sha) == {"e2e": Phase.SUCCESS, "lint": Phase.SUCCESS}


def test_genuine_status_and_check_run_bodies_normalise(genuine: Genuine) -> None:
    combined = genuine.openapi("repos.get-combined-status-for-ref.200")
    first = from_status(combined["statuses"][0])
    assert (first.key, first.phase) == ("continuous-integration/jenkins", Phase.SUCCESS)
    assert first.updated_at == datetime(2012, 7, 20, 1, 19, 13, tzinfo=UTC)
    run = from_check_run(genuine.openapi("checks.list-for-ref.200")["check_runs"][0])
    assert (run.key, run.phase) == ("mighty_readme", Phase.SUCCESS)
    assert run.url == "https://github.com/github/hello-world/runs/4"
    assert run.description == "Mighty Readme report"
    pending = from_check_run(genuine.openapi("checks.create.201.example-of-in-progress-conclusion"))
    assert pending.phase is Phase.PENDING


def test_an_idle_resync_reads_gates_without_spending_rate_limit(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.post_status(FULL_NAME, sha, "ci", "success")
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "success")
    first = plugin.get_commit_statuses(repo=repo, sha=sha)  # GraphQL: one call
    assert plugin.get_commit_statuses(repo=repo, sha=sha) == first  # REST: two, remembered
    charged, counted = fake.charged(), scm_calls()
    again = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert again == first
    assert fake.charged() == charged  # two 304s, free
    assert [c.status for c in fake.calls[-2:]] == [304, 304]
    assert scm_calls() - counted == 2


def test_a_gate_that_changes_after_a_conditional_read_is_seen(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.post_check_run(FULL_NAME, sha, "build", "in_progress")
    assert phases(plugin, repo, sha) == {"build": Phase.PENDING}
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "failure")
    assert phases(plugin, repo, sha) == {"build": Phase.FAILURE}


def test_more_statuses_than_one_page_are_all_read(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    for i in range(130):
        fake.post_status(FULL_NAME, sha, f"check-{i:03}", "success")
    assert len(plugin.get_commit_statuses(repo=repo, sha=sha)) == 130


def test_the_promoter_writes_its_gates_as_commit_statuses_by_default(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    status = CommitStatus(
        key="promoter/previous-environment",
        phase=Phase.PENDING,
        description="waiting for environment/dev: health is pending " + "x" * 200,
        url="https://promoter.example.com/strategies/guestbook",
    )
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    [stored] = fake.repositories[FULL_NAME].statuses[sha]
    assert (stored["context"], stored["state"]) == ("promoter/previous-environment", "pending")
    assert stored["target_url"] == "https://promoter.example.com/strategies/guestbook"
    assert len(stored["description"]) == 140
    [read] = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert (read.key, read.phase) == (status.key, Phase.PENDING)


def test_a_gate_someone_else_overwrote_is_written_again(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    status = CommitStatus(key="promoter/gates", phase=Phase.PENDING, description="waiting: ci")
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    fake.post_status(FULL_NAME, sha, "promoter/gates", "success")  # forged by someone else
    assert phases(plugin, repo, sha) == {"promoter/gates": Phase.SUCCESS}
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    assert phases(plugin, repo, sha) == {"promoter/gates": Phase.PENDING}
    assert len(fake.repositories[FULL_NAME].statuses[sha]) == 3


def test_with_check_runs_configured_the_promoter_writes_check_runs(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
    sha: str,
) -> None:
    plugin = make_plugin(app_provider(status_checks="checkRuns"))
    for phase in (Phase.PENDING, Phase.FAILURE, Phase.SUCCESS):
        plugin.set_commit_status(
            repo=repo,
            sha=sha,
            status=CommitStatus(key="promoter/gates", phase=phase, description=f"now {phase}"),
        )
    runs = fake.repositories[FULL_NAME].check_runs[sha]
    assert [(r["status"], r["conclusion"]) for r in reversed(runs)] == [
        ("in_progress", None),
        ("completed", "failure"),
        ("completed", "success"),
    ]
    assert runs[0]["output"]["title"] == "now success"
    assert fake.repositories[FULL_NAME].statuses == {}
    assert phases(plugin, repo, sha) == {"promoter/gates": Phase.SUCCESS}


def test_the_re_read_before_a_merge_takes_one_call_whatever_the_gates_are(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "success")
    fake.post_status(FULL_NAME, sha, "lint", "success")
    plugin.get_commit_statuses(repo=repo, sha=sha)
    plugin.get_commit_statuses(repo=repo, sha=sha)  # read before, by REST too
    before = scm_calls()
    both = plugin.get_commit_statuses(repo=repo, sha=sha, keys=("build", "lint"))
    assert {s.key: s.phase for s in both} == {"build": Phase.SUCCESS, "lint": Phase.SUCCESS}
    assert scm_calls() - before == 1
    assert fake.calls[-1].path == "/graphql"


def test_read_by_rest_alone_the_re_read_takes_one_call_when_check_runs_hold_every_gate(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    plugin._statuses.reads = "rest"
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "success")
    fake.post_status(FULL_NAME, sha, "lint", "success")
    before = scm_calls()
    found = plugin.get_commit_statuses(repo=repo, sha=sha, keys=("build",))
    assert {s.key for s in found} == {"build"}
    assert scm_calls() - before == 1
    both = plugin.get_commit_statuses(repo=repo, sha=sha, keys=("build", "lint"))
    assert {s.key: s.phase for s in both} == {"build": Phase.SUCCESS, "lint": Phase.SUCCESS}
    assert not [c for c in fake.calls if c.path == "/graphql"]


def test_a_commit_no_strategy_tracks_any_more_leaves_the_etag_cache_and_others_stay(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str, sandbox: GitSandbox
) -> None:
    other = sandbox.commit("environment/dev-next", {"app.yaml": "image: other\n"}, "other")
    for commit in (sha, other):
        fake.post_status(FULL_NAME, commit, "ci", "success")
        plugin.get_commit_statuses(repo=repo, sha=commit)  # GraphQL
        plugin.get_commit_statuses(repo=repo, sha=commit)  # REST, kept by ETag
        assert plugin.commit_verification(repo=repo, sha=commit) is not None
    cache = plugin._pulls._api.client._etags
    held = {commit: [k for k in cache if f"/commits/{commit}" in k] for commit in (sha, other)}
    assert [len(keys) for keys in held.values()] == [3, 3]  # status, check runs, the commit

    plugin.forget_commits(repo=repo, shas={sha})

    assert not [k for k in cache if f"/commits/{sha}" in k]
    assert [k for k in cache if f"/commits/{other}" in k] == held[other]
    plugin.get_commit_statuses(repo=repo, sha=sha)  # a first read again: GraphQL
    assert fake.calls[-1].path == "/graphql"
    plugin.get_commit_statuses(repo=repo, sha=sha)  # then REST afresh: 200s, not 304s
    assert [c.status for c in fake.calls[-2:]] == [200, 200]
    plugin.get_commit_statuses(repo=repo, sha=other)
    assert [c.status for c in fake.calls[-2:]] == [304, 304]
