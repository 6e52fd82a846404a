"""Reviews through the GitHub plugin, for the approval gate, against the fake GitHub."""

from __future__ import annotations

from promoter.config import Repository
from promoter.models import PullRequest
from scm_plugins.github import GitHubScm
from scm_plugins.github.reviews import to_review
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME
from .fake_github import FakeGitHub
from .genuine import Genuine
from .test_pulls import DEV, open_dev


def test_the_genuine_review_example_reads_as_an_approval(genuine: Genuine) -> None:
    example = genuine.openapi("pulls.list-reviews.200")[0]
    review = to_review(example)
    assert review is not None
    assert (review.user, review.approved) == ("octocat", True)
    assert review.commit_sha == example["commit_id"]


def test_reviews_keep_their_order_and_leave_out_comments(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    pr = open_dev(plugin, repo)
    head = sandbox.branch_sha(f"{DEV}-next")
    fake.review(FULL_NAME, pr.number, "ada", "CHANGES_REQUESTED", head)
    fake.review(FULL_NAME, pr.number, "ada", "COMMENTED", head)
    fake.review(FULL_NAME, pr.number, "ada", "APPROVED", head)
    fake.review(FULL_NAME, pr.number, "grace", "APPROVED", "0" * 40)
    reviews = plugin.get_reviews(repo=repo, number=pr.number)
    assert [(r.user, r.approved, r.commit_sha) for r in reviews] == [
        ("ada", False, head),
        ("ada", True, head),
        ("grace", True, "0" * 40),
    ]


def with_sre_reviews(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> PullRequest:
    """A pull request approved by grace, of team ``sre``, and by ada, of no team."""
    pr = open_dev(plugin, repo)
    assert pr.head_sha == sandbox.branch_sha(f"{DEV}-next")
    fake.teams[(FULL_NAME.split("/")[0], "sre")] = {"grace"}
    fake.review(FULL_NAME, pr.number, "grace", "APPROVED", pr.head_sha)
    fake.review(FULL_NAME, pr.number, "ada", "APPROVED", pr.head_sha)
    return pr


def test_team_membership_is_asked_only_for_approvers(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    pr = with_sre_reviews(plugin, repo, fake, sandbox)
    fake.review(FULL_NAME, pr.number, "mallory", "CHANGES_REQUESTED", pr.head_sha)
    owner = FULL_NAME.split("/")[0]
    reviews = plugin.get_reviews(repo=repo, number=pr.number, teams=["sre"])
    assert {r.user: r.teams for r in reviews} == {"grace": ("sre",), "ada": (), "mallory": ()}
    asked = [c.path for c in fake.calls if "/memberships/" in c.path]
    assert sorted(asked) == sorted(
        f"/orgs/{owner}/teams/sre/memberships/{user}" for user in ("grace", "ada")
    )


def test_reviews_and_memberships_read_again_unchanged_are_free_and_kept_slim(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    """Read a second time, reviews and team memberships are answered 304 and the same as
    the first time; what the ETag cache keeps of them is what the gate reads (the reviews,
    whether the membership is active), not GitHub's JSON."""
    pr = with_sre_reviews(plugin, repo, fake, sandbox)
    first = plugin.get_reviews(repo=repo, number=pr.number, teams=["sre"])
    again = plugin.get_reviews(repo=repo, number=pr.number, teams=["sre"])
    assert again == first and {r.user: r.teams for r in first} == {"grace": ("sre",), "ada": ()}
    reads = [c for c in fake.calls if "/reviews" in c.path or "/memberships/" in c.path]
    assert sorted((c.path.rsplit("/", 1)[-1], c.status) for c in reads[-3:]) == [
        ("ada", 404),  # not a member: GitHub answers 404, nothing to keep
        ("grace", 304),
        ("reviews", 304),
    ]
    kept = [value for _, value in plugin._pulls._api.client._etags.values()]
    assert not [value for value in kept if isinstance(value, dict)]
    assert True in kept  # grace's membership
    assert [[r.user for r in v] for v in kept if isinstance(v, list)] == [["grace", "ada"]]
