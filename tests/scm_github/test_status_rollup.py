"""A commit's first read on GitHub: statuses and check runs in one GraphQL request
(``statusCheckRollup``), the same gates as the two REST reads give, and every way the
answer can go wrong turned into the SCM error the daemon knows."""

from __future__ import annotations

import pytest

from promoter.config import Repository
from promoter.errors import ScmError, ScmNotFound, ScmRateLimited, ScmUnavailable
from promoter.models import Phase
from scm_plugins.budget import CredentialBudget, Priority, Throttled
from scm_plugins.github import GitHubScm
from scm_plugins.github.limits import GITHUB_LIMITS, GRAPHQL_PATH, cost
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, scm_calls
from .fake_github import FakeGitHub


@pytest.fixture
def sha(sandbox: GitSandbox) -> str:
    return sandbox.branch_sha("environment/dev-next") or ""


def test_a_graphql_answer_that_is_not_an_object_is_an_scm_error(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.fail_next("POST", r"^/graphql$", status=200, body=["not", "an", "object"])
    with pytest.raises(ScmError, match="not an object"):
        plugin.get_commit_statuses(repo=repo, sha=sha)


def test_a_rollup_without_a_list_of_contexts_is_an_scm_error(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    body = {"data": {"repository": {"object": {"statusCheckRollup": {"contexts": {}}}}}}
    fake.fail_next("POST", r"^/graphql$", status=200, body=body)
    with pytest.raises(ScmError, match="no list of contexts"):
        plugin.get_commit_statuses(repo=repo, sha=sha)


def test_a_graphql_5xx_is_unavailable(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.fail_next("POST", r"^/graphql$", status=502, body={"message": "Server Error"})
    with pytest.raises(ScmUnavailable):
        plugin.get_commit_statuses(repo=repo, sha=sha)


def test_githubs_rate_limited_graphql_error_is_a_rate_limit(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    refusal = {"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}
    fake.fail_next("POST", r"^/graphql$", status=200, body={"errors": [refusal]})
    with pytest.raises(ScmRateLimited) as raised:
        plugin.get_commit_statuses(repo=repo, sha=sha)
    assert raised.value.retry_after > 0


def test_a_secondary_limit_on_graphql_is_a_rate_limit_with_githubs_retry_after(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.rate_limit_next("POST", r"^/graphql$", retry_after=9)
    with pytest.raises(ScmRateLimited) as raised:
        plugin.get_commit_statuses(repo=repo, sha=sha)
    assert raised.value.retry_after == 9


def test_a_commit_github_does_not_know_is_not_found(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    with pytest.raises(ScmNotFound, match="not found"):
        plugin.get_commit_statuses(repo=repo, sha="c" * 40)


def test_a_repository_github_does_not_know_is_not_found(
    plugin: GitHubScm, fake: FakeGitHub, sha: str
) -> None:
    gone = Repository(name="gone", url="https://github.com/acme/gone.git", scm_provider="github")
    with pytest.raises(ScmNotFound):
        plugin.get_commit_statuses(repo=gone, sha=sha)


def test_a_commit_with_neither_statuses_nor_check_runs_has_no_gates(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    assert plugin.get_commit_statuses(repo=repo, sha=sha) == []
    assert [c.path for c in fake.calls] == [GRAPHQL_PATH]


@pytest.mark.parametrize(
    ("status", "conclusion"),
    [
        ("completed", "success"),
        ("completed", "neutral"),
        ("completed", "skipped"),
        ("queued", None),
        ("in_progress", None),
        ("completed", "failure"),
        ("completed", "cancelled"),
        ("completed", "timed_out"),
        ("completed", "action_required"),
        ("completed", "stale"),
    ],
)
@pytest.mark.parametrize("state", ["success", "pending", "failure", "error"])
def test_one_graphql_read_gives_the_gates_the_two_rest_reads_give(
    plugin: GitHubScm,
    repo: Repository,
    fake: FakeGitHub,
    sha: str,
    state: str,
    status: str,
    conclusion: str | None,
) -> None:
    fake.post_status(FULL_NAME, sha, "ci/jenkins", state, description="d", target_url="https://x")
    fake.post_check_run(FULL_NAME, sha, "build-and-test", status, conclusion)
    before = scm_calls()
    by_graphql = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert scm_calls() - before == 1
    by_rest = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert [c.path for c in fake.calls] == [
        GRAPHQL_PATH,
        f"/repos/{FULL_NAME}/commits/{sha}/status",
        f"/repos/{FULL_NAME}/commits/{sha}/check-runs",
    ]
    assert by_graphql == by_rest


def test_the_latest_check_run_per_name_wins_in_the_graphql_read_too(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    fake.post_check_run(FULL_NAME, sha, "e2e", "completed", "failure")
    fake.post_check_run(FULL_NAME, sha, "e2e", "completed", "success")
    found = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert {s.key: s.phase for s in found} == {"e2e": Phase.SUCCESS}


def test_more_contexts_than_one_page_are_all_read_a_request_a_page(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str
) -> None:
    for i in range(130):
        fake.post_status(FULL_NAME, sha, f"check-{i:03}", "success")
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "success")
    found = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert len(found) == 131
    assert [c.path for c in fake.calls] == [GRAPHQL_PATH, GRAPHQL_PATH]


def test_a_graphql_read_is_charged_to_the_secondary_points_but_not_the_rest_primary_limit() -> None:
    query = cost("get_status_check_rollup", "POST", GRAPHQL_PATH)
    mutation = cost("enqueue_pull_request", "POST", GRAPHQL_PATH, mutation=True)
    before_merge = cost("x", "POST", GRAPHQL_PATH, priority=Priority.PRE_MERGE_READ)
    assert (query.core, query.points, query.priority) == (False, 1, Priority.READ)
    assert (mutation.core, mutation.points, mutation.priority) == (False, 5, Priority.WRITE)
    assert before_merge.priority is Priority.PRE_MERGE_READ
    assert cost("create_status", "POST", f"/repos/{FULL_NAME}/statuses/abc").core


def test_a_spent_rest_limit_still_lets_a_graphql_read_through_and_a_rest_read_waits() -> None:
    now = [1000.0]
    budget = CredentialBudget(GITHUB_LIMITS, clock=lambda: now[0], wall=lambda: 1_700_000_000.0)
    spent = {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": str(1_700_000_000 + 1800),
        "x-ratelimit-resource": "core",
    }
    budget.admit(cost("get_pull", "GET", f"/repos/{FULL_NAME}/pulls/1")).answered(200, spent)
    budget.admit(cost("get_status_check_rollup", "POST", GRAPHQL_PATH)).answered(200, {})
    with pytest.raises(Throttled, match="primary"):
        budget.admit(cost("get_pull", "GET", f"/repos/{FULL_NAME}/pulls/1"))


def spent(fake: FakeGitHub, since: int) -> tuple[int, int]:
    """What the calls since ``since`` cost: (REST calls charged, GraphQL points)."""
    calls = fake.calls[since:]
    graphql = sum(1 for c in calls if c.path == GRAPHQL_PATH)
    rest = sum(1 for c in calls if c.path != GRAPHQL_PATH and c.status != 304)
    return rest, graphql


@pytest.mark.parametrize(
    ("reads", "first", "unchanged", "changed"),
    [
        ("auto", (0, 1), (0, 0), (1, 0)),
        ("rest", (2, 0), (0, 0), (1, 0)),
    ],
)
def test_what_each_way_of_reading_spends_of_a_users_two_budgets(
    plugin: GitHubScm,
    repo: Repository,
    fake: FakeGitHub,
    sha: str,
    reads: str,
    first: tuple[int, int],
    unchanged: tuple[int, int],
    changed: tuple[int, int],
) -> None:
    """A commit's first read: two REST calls charged, or one GraphQL point and none of
    REST's limit. Read again unchanged: free by REST (304s), which ``auto`` reads by. Read
    again after a status changed: the combined status is charged again, its check runs
    not."""
    plugin._statuses.reads = reads  # type: ignore[assignment]
    fake.post_status(FULL_NAME, sha, "ci", "success")
    fake.post_check_run(FULL_NAME, sha, "build", "completed", "success")
    mark = len(fake.calls)
    plugin.get_commit_statuses(repo=repo, sha=sha)
    assert spent(fake, mark) == first
    if reads == "auto":
        plugin.get_commit_statuses(repo=repo, sha=sha)  # its first REST read: charged
    mark = len(fake.calls)
    plugin.get_commit_statuses(repo=repo, sha=sha)
    assert spent(fake, mark) == unchanged
    fake.post_status(FULL_NAME, sha, "health", "success")
    mark = len(fake.calls)
    found = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert {s.key for s in found} == {"ci", "build", "health"}
    assert spent(fake, mark) == changed
