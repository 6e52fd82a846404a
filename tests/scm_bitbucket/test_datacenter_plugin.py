"""The Bitbucket Data Center plugin against the fake over real HTTP, under a context path:
failure paths first (errors in Data Center's shape, a 429 with Retry-After, a version out of
date, a vetoed merge), then the duplicate's 409, the older build-status API, and reviews."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmNotFound, ScmRateLimited
from promoter.models import CommitStatus, Phase
from scm_plugins.bitbucket_datacenter import BitbucketDataCenterScm
from tests.support import ENVIRONMENTS, GitOpsRepo

from .conftest import PROJECT_REPO, TOKEN, TOKEN_ENV, datacenter_provider
from .fake_datacenter import FakeDataCenter

DEV = ENVIRONMENTS[0]


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(gitops: GitOpsRepo) -> Iterator[FakeDataCenter]:
    with FakeDataCenter(token=TOKEN, retry_after=7) as dc:
        dc.add_repository(PROJECT_REPO, gitops.path)
        yield dc


@pytest.fixture
def repo(gitops: GitOpsRepo) -> Repository:
    return Repository(name="gitops", url=str(gitops.path), scm_provider="b", path=PROJECT_REPO)


@pytest.fixture
def plugin(
    fake: FakeDataCenter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BitbucketDataCenterScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    made = BitbucketDataCenterScm(
        provider=datacenter_provider(fake.base_url), state_dir=str(tmp_path)
    )
    yield made
    made.close()


def open_dev(plugin: BitbucketDataCenterScm, repo: Repository, gitops: GitOpsRepo) -> int:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    pr = plugin.open_pull_request(
        repo=repo, head=DEV + "-next", base=DEV, title="Promote", body="", labels=()
    )
    return pr.number


def test_an_unknown_repository_is_not_found_in_data_centers_own_words(
    plugin: BitbucketDataCenterScm, gitops: GitOpsRepo
) -> None:
    gone = Repository(name="gone", url=str(gitops.path), scm_provider="b", path="OPS/gone")
    with pytest.raises(ScmNotFound, match="Repository OPS/gone does not exist"):
        plugin.find_open_pull_request(repo=gone, head="a", base="b")


def test_a_429_waits_its_retry_after(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository
) -> None:
    fake.limit_for(60)
    with pytest.raises(ScmRateLimited) as caught:
        plugin.get_commit_statuses(repo=repo, sha="a" * 40)
    assert caught.value.retry_after == 7


def test_a_moved_head_is_refused_by_the_pull_requests_version(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    decided = gitops.tip(DEV + "-next")
    before = gitops.tip(DEV)
    gitops.change("1.2.0", "Bump guestbook to 1.2.0")  # rescoped: the version grows
    with pytest.raises(ScmConflict, match="head moved") as refused:
        plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=decided, message="")
    assert not refused.value.lasting
    assert [c.status for c in fake.count("POST", r"/merge$")] == [409]  # the server refused
    assert gitops.tip(DEV) == before


def test_a_merge_after_an_edit_reads_the_new_version_and_merges_once(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    head = gitops.tip(DEV + "-next")
    fake.handle(  # a person renames it in Bitbucket: version 1
        "PUT",
        f"/bitbucket/rest/api/latest/projects/OPS/repos/gitops/pull-requests/{number}",
        {"authorization": f"Bearer {TOKEN}"},
        b'{"version": 0, "title": "renamed"}',
    )
    merge = plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="")
    assert merge == gitops.tip(DEV)
    assert [c.status for c in fake.count("POST", r"/merge$")] == [409, 200]


def test_a_vetoed_merge_is_a_lasting_refusal_in_its_vetoes_words(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    fake.fail_next(
        "POST",
        r"/merge$",
        409,
        body={
            "errors": [
                {
                    "message": "Merging the pull request has been vetoed.",
                    "exceptionName": "com.atlassian.bitbucket.pull.PullRequestMergeVetoedException",
                    "vetoes": [{"summaryMessage": "Requires 2 approvals"}],
                }
            ]
        },
    )
    with pytest.raises(ScmConflict, match="Requires 2 approvals") as refused:
        plugin.merge_pull_request(
            repo=repo, number=number, expected_head_sha=gitops.tip(DEV + "-next"), message=""
        )
    assert refused.value.lasting


def test_opening_a_pull_request_twice_returns_the_one_the_409_names(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    again = plugin.open_pull_request(
        repo=repo, head=DEV + "-next", base=DEV, title="again", body="", labels=()
    )
    assert again.number == number
    assert [c.status for c in fake.count("POST", r"/pull-requests$")] == [201, 409]


def test_an_older_server_s_build_status_api_is_used_when_the_newer_is_missing(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    fake.legacy_only = True
    sha = gitops.tip(DEV)
    for phase in (Phase.PENDING, Phase.SUCCESS):
        plugin.set_commit_status(repo=repo, sha=sha, status=CommitStatus(key="ci", phase=phase))
    [status] = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert (status.key, status.phase) == ("ci", Phase.SUCCESS)
    paths = [c.path for c in fake.calls if "/builds" in c.path or "build-status" in c.path]
    assert sum("/rest/build-status/1.0/" in p for p in paths) == 3  # newer tried once only
    assert sum(p.endswith("/builds") for p in paths) == 1


def test_reviews_and_the_pull_requests_author_are_data_centers_users(
    plugin: BitbucketDataCenterScm, fake: FakeDataCenter, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    fake.review(PROJECT_REPO, number, "grace")
    fake.review(PROJECT_REPO, number, "ada", "NEEDS_WORK")
    head = gitops.tip(DEV + "-next")
    reviews = plugin.get_reviews(repo=repo, number=number)
    assert [(r.user, r.approved, r.commit_sha) for r in reviews] == [
        ("grace", True, head),
        ("ada", False, head),
    ]
    found = plugin.find_open_pull_request(repo=repo, head=DEV + "-next", base=DEV)
    assert found is not None and found.author == "promoter-bot" and found.head_sha == head
