"""Pull requests through the GitHub plugin against the fake GitHub and a real bare repository."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmConflict, ScmError, ScmNotFound
from promoter.models import PullRequest, PullRequestState
from scm_plugins.github import GitHubScm
from scm_plugins.github.pulls import pull_request
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, scm_calls
from .fake_github import FakeGitHub
from .genuine import Genuine

DEV, DEV_NEXT = "environment/dev", "environment/dev-next"


def open_dev(plugin: GitHubScm, repo: Repository, **overrides: object) -> PullRequest:
    args: dict[str, object] = {
        "repo": repo,
        "head": DEV_NEXT,
        "base": DEV,
        "title": "Promote abc1234 to environment/dev",
        "body": "Promotes the dry commit abc1234.",
        "labels": ("promotion", "environment/dev"),
        **overrides,
    }
    return plugin.open_pull_request(**args)  # type: ignore[arg-type]


def test_opening_a_pull_request_sends_title_body_and_labels_and_reports_the_head(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    pr = plugin.open_pull_request(
        repo=repo,
        head=DEV_NEXT,
        base=DEV,
        title="Promote to dev",
        body="body text",
        labels=("promotion", "environment/dev"),
    )
    assert pr.state is PullRequestState.OPEN
    assert (pr.head_branch, pr.base_branch) == (DEV_NEXT, DEV)
    assert pr.head_sha == sandbox.branch_sha(DEV_NEXT)
    assert pr.labels == ("promotion", "environment/dev")
    assert pr.url == f"https://github.com/{FULL_NAME}/pull/{pr.number}"
    stored = fake.pull(FULL_NAME, pr.number)
    assert (stored["title"], stored["body"]) == ("Promote to dev", "body text")
    assert [label["name"] for label in stored["labels"]] == ["promotion", "environment/dev"]


def test_finding_the_open_pull_request_for_head_and_base(
    plugin: GitHubScm, repo: Repository
) -> None:
    assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) is None
    opened = open_dev(plugin, repo)
    found = plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)
    assert found == opened
    assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base="environment/x") is None


def test_opening_twice_returns_the_pull_request_already_open(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    first = open_dev(plugin, repo)
    second = open_dev(plugin, repo)
    assert second == first
    assert len(fake.pulls_of(FULL_NAME)) == 1


def test_a_crash_between_open_and_record_never_leaves_two_pull_requests(
    fake: FakeGitHub,
    token_provider: ScmProvider,
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    before_crash = make_plugin(token_provider)
    opened = open_dev(before_crash, repo)
    after_restart = make_plugin(token_provider)  # nothing remembered in memory
    assert open_dev(after_restart, repo) == opened
    assert after_restart.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) == opened
    assert [pr["number"] for pr in fake.pulls_of(FULL_NAME)] == [opened.number]


def test_opening_without_anything_to_promote_is_a_conflict(
    plugin: GitHubScm, repo: Repository, sandbox: GitSandbox
) -> None:
    sandbox.set_branch(DEV_NEXT, sandbox.branch_sha(DEV) or "")
    with pytest.raises(ScmConflict, match="No commits between"):
        open_dev(plugin, repo)


def test_updating_changes_title_and_body_and_keeps_labels_people_added(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    pr = plugin.open_pull_request(
        repo=repo, head=DEV_NEXT, base=DEV, title="old", body="old", labels=("promotion",)
    )
    fake.repositories[FULL_NAME].pulls[pr.number]["labels"].append("approved")
    updated = plugin.update_pull_request(
        repo=repo, number=pr.number, title="new", body="new body", labels=("promotion", "dev")
    )
    assert (updated.title, updated.body) == ("new", "new body")
    assert updated.labels == ("promotion", "approved", "dev")
    stored = fake.pull(FULL_NAME, pr.number)
    assert [label["name"] for label in stored["labels"]] == ["promotion", "approved", "dev"]


def test_updating_with_the_same_labels_costs_one_call(plugin: GitHubScm, repo: Repository) -> None:
    pr = open_dev(plugin, repo)
    before = scm_calls()
    plugin.update_pull_request(
        repo=repo, number=pr.number, title="t", body="b", labels=("promotion",)
    )
    assert scm_calls() - before == 1


def test_merging_with_the_expected_head_makes_a_real_merge_commit(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    pr = open_dev(plugin, repo)
    head = sandbox.branch_sha(DEV_NEXT) or ""
    old_base = sandbox.branch_sha(DEV)
    merged = plugin.merge_pull_request(
        repo=repo,
        number=pr.number,
        expected_head_sha=head,
        message="Promote v2 to dev\n\nDry commit abc1234.",
    )
    assert sandbox.branch_sha(DEV) == merged
    assert sandbox.git("rev-list", "--parents", "-n1", merged).split()[1:] == [old_base, head]
    assert sandbox.git("rev-parse", f"{merged}^{{tree}}") == sandbox.git(
        "rev-parse", f"{head}^{{tree}}"
    )
    assert sandbox.git("log", "-1", "--format=%B", merged).strip() == (
        "Promote v2 to dev\n\nDry commit abc1234."
    )
    after = plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)
    assert after is None
    assert pull_request(fake.pull(FULL_NAME, pr.number)).state is PullRequestState.MERGED


def test_merging_uses_the_configured_method(
    fake: FakeGitHub,
    token_provider: ScmProvider,
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
    sandbox: GitSandbox,
) -> None:
    github = token_provider.github
    assert github is not None
    squash = ScmProvider(name="gh", github=github.model_copy(update={"merge_method": "squash"}))
    plugin = make_plugin(squash)
    pr = open_dev(plugin, repo)
    merged = plugin.merge_pull_request(
        repo=repo,
        number=pr.number,
        expected_head_sha=sandbox.branch_sha(DEV_NEXT) or "",
        message="m",
    )
    assert len(sandbox.git("rev-list", "--parents", "-n1", merged).split()) == 2
    assert fake.calls[-1].body["merge_method"] == "squash"


def test_merging_after_the_head_moved_is_a_conflict_and_leaves_the_base_alone(
    plugin: GitHubScm, repo: Repository, sandbox: GitSandbox
) -> None:
    pr = open_dev(plugin, repo)
    seen_head = sandbox.branch_sha(DEV_NEXT) or ""
    base = sandbox.branch_sha(DEV)
    sandbox.commit(DEV_NEXT, {"app.yaml": "image: v3\n"}, "hydrate v3")
    with pytest.raises(ScmConflict, match="409: Head branch was modified") as raised:
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=seen_head, message="m"
        )
    assert raised.value.__cause__ is not None
    assert sandbox.branch_sha(DEV) == base


def test_merging_a_pull_request_that_is_not_open_is_a_conflict(
    plugin: GitHubScm, repo: Repository, sandbox: GitSandbox
) -> None:
    pr = open_dev(plugin, repo)
    plugin.close_pull_request(repo=repo, number=pr.number, comment="")
    with pytest.raises(ScmConflict, match="405: Pull Request is not mergeable"):
        plugin.merge_pull_request(
            repo=repo,
            number=pr.number,
            expected_head_sha=sandbox.branch_sha(DEV_NEXT) or "",
            message="m",
        )


def test_closing_comments_with_the_reason_then_closes(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    pr = open_dev(plugin, repo)
    plugin.close_pull_request(repo=repo, number=pr.number, comment="Would move backwards.")
    assert fake.comments_of(FULL_NAME, pr.number) == ["Would move backwards."]
    closed = pull_request(fake.pull(FULL_NAME, pr.number))
    assert closed.state is PullRequestState.CLOSED
    assert closed.merge_sha is None


def test_commenting_on_a_missing_pull_request_is_not_found(
    plugin: GitHubScm, repo: Repository
) -> None:
    with pytest.raises(ScmNotFound):
        plugin.comment_pull_request(repo=repo, number=999, body="hello")


def test_genuine_pull_request_bodies_map_to_pull_requests(genuine: Genuine) -> None:
    created = pull_request(genuine.openapi("pulls.create.201"))
    assert (created.number, created.state, created.head_branch) == (
        1347,
        PullRequestState.OPEN,
        "new-topic",
    )
    assert created.merge_sha is None  # GitHub's test-merge SHA is not a merge
    assert created.labels == ("bug",)
    assert created.author == "octocat"  # its approvals never count (four eyes)
    listed = pull_request(genuine.openapi("pulls.list.200")[0])
    assert listed.id == "1"
    merged = genuine.openapi("pulls.get.200")
    merged.update(state="closed", merged=True, merged_at="2011-01-26T19:01:12Z")
    assert pull_request(merged).state is PullRequestState.MERGED
    assert pull_request(merged).merge_sha == merged["merge_commit_sha"]


def test_a_lookup_answered_unchanged_is_free_and_the_cache_keeps_only_the_pull_request(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    """The page GitHub answers a lookup with is reduced to the pull request found before
    it is kept for the next conditional read (each pull request of the page is about
    20 KB of parsed JSON; a daemon looks up one per environment)."""
    opened = open_dev(plugin, repo)
    assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) == opened
    assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) == opened
    lookups = [call.status for call in fake.calls if call.method == "GET" and "/pulls" in call.path]
    assert lookups[-2:] == [200, 304]
    kept = [value for _, value in plugin._pulls._api.client._etags.values()]
    assert opened in kept
    assert not [value for value in kept if isinstance(value, list)]


@pytest.mark.parametrize(
    "page", [{"message": "<html>oops</html>"}, ["not a pull request"], [{"number": 1}]]
)
def test_a_lookup_answered_with_a_page_of_another_shape_says_so(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, page: object
) -> None:
    """A 200 whose body is not a list of pull requests (a proxy's page, a truncated
    answer) is GitHub's fault in words, not a TypeError from deep in the lookup."""
    fake.fail_next("GET", r"/pulls$", status=200, body=page)
    with pytest.raises(ScmError) as raised:
        plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)
    assert str(raised.value) == (
        f"GitHub's open pull requests for {DEV_NEXT} into {DEV} are not a list of them"
    )
    assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) is None
