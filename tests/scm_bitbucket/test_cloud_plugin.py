"""The Bitbucket Cloud plugin against the fake over real HTTP: failure paths first (errors in
Cloud's shape, a 429, a declined pull request, a moved head, a conflict), then full SHAs for
Cloud's 12-character ones, squash merges, reviews and an OAuth consumer."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmAuthError, ScmConflict, ScmNotFound, ScmRateLimited
from promoter.models import CommitStatus, Phase, PullRequestState
from scm_plugins.bitbucket_cloud import BitbucketCloudScm
from tests.support import ENVIRONMENTS, GitOpsRepo

from .conftest import PASSWORD, PASSWORD_ENV, USERNAME, WORKSPACE_REPO, cloud_provider
from .fake_cloud import FakeCloud
from .fake_http import git
from .fake_oauth import FakeTokenEndpoint

DEV = ENVIRONMENTS[0]


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(gitops: GitOpsRepo) -> Iterator[FakeCloud]:
    with FakeCloud(username=USERNAME, password=PASSWORD, token="oauth-access-token") as cloud:
        cloud.add_repository(WORKSPACE_REPO, gitops.path)
        yield cloud


@pytest.fixture
def repo(gitops: GitOpsRepo) -> Repository:
    return Repository(name="gitops", url=str(gitops.path), scm_provider="b", path=WORKSPACE_REPO)


def plugin_for(fake: FakeCloud, tmp_path: Path, **more: object) -> BitbucketCloudScm:
    return BitbucketCloudScm(provider=cloud_provider(fake.url, **more), state_dir=str(tmp_path))


@pytest.fixture
def plugin(
    fake: FakeCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BitbucketCloudScm]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    made = plugin_for(fake, tmp_path)
    yield made
    made.close()


def open_dev(plugin: BitbucketCloudScm, repo: Repository, gitops: GitOpsRepo) -> int:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    pr = plugin.open_pull_request(
        repo=repo, head=DEV + "-next", base=DEV, title="Promote", body="", labels=("promotion",)
    )
    return pr.number


def test_an_unknown_repository_is_not_found_in_clouds_own_words(
    plugin: BitbucketCloudScm, gitops: GitOpsRepo
) -> None:
    gone = Repository(name="gone", url=str(gitops.path), scm_provider="b", path="acme/gone")
    with pytest.raises(ScmNotFound, match="Repository acme/gone not found"):
        plugin.find_open_pull_request(repo=gone, head="a", base="b")


def test_a_rate_limit_says_to_wait_the_configured_time_and_pauses_every_call(
    fake: FakeCloud, tmp_path: Path, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    plugin = plugin_for(fake, tmp_path, rateLimitWait="42s")
    try:
        fake.limit_for(60)
        with pytest.raises(ScmRateLimited) as caught:
            plugin.find_open_pull_request(repo=repo, head="a", base="b")
        assert caught.value.retry_after == 42
        sent = len(fake.calls)
        with pytest.raises(ScmRateLimited):
            plugin.get_commit_statuses(repo=repo, sha="a" * 40)
        assert len(fake.calls) == sent  # paused: Bitbucket was not asked again
    finally:
        plugin.close()


def test_a_wrong_password_is_an_auth_error(
    fake: FakeCloud, tmp_path: Path, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "wrong")
    plugin = plugin_for(fake, tmp_path)
    try:
        with pytest.raises(ScmAuthError):
            plugin.find_open_pull_request(repo=repo, head="a", base="b")
    finally:
        plugin.close()


def test_a_pull_request_declined_by_a_person_is_not_merged(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    fake.person_declines(WORKSPACE_REPO, number)
    before = gitops.tip(DEV)
    with pytest.raises(ScmConflict) as refused:
        plugin.merge_pull_request(
            repo=repo, number=number, expected_head_sha=gitops.tip(DEV + "-next"), message="m"
        )
    assert refused.value.lasting and gitops.tip(DEV) == before


def test_a_head_moved_since_the_decision_is_refused_before_bitbucket_is_asked(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    decided = gitops.tip(DEV + "-next")
    gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    with pytest.raises(ScmConflict, match="head moved"):
        plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=decided, message="m")
    assert fake.count("POST", r"/merge$") == []
    assert [p["state"] for p in fake.pulls_of(WORKSPACE_REPO)] == ["OPEN"]


def test_a_conflict_is_a_lasting_refusal(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    head = gitops.tip(DEV + "-next")
    # A person's hotfix on the active branch, touching the same files.
    hotfix = _commit_changing_values(gitops, gitops.tip(DEV))
    subprocess.run(
        ["git", "-C", str(gitops.path.parent / "hotfix"), "push", "-q", "origin", f"HEAD:{DEV}"],
        check=True,
    )
    assert gitops.tip(DEV) == hotfix
    with pytest.raises(ScmConflict) as refused:
        plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert refused.value.lasting
    assert "resolve all merge conflicts" in str(refused.value)


def _commit_changing_values(gitops: GitOpsRepo, parent: str) -> str:
    """A commit on ``parent`` that rewrites every file it has (a person's hotfix)."""
    work = gitops.path.parent / "hotfix"
    env = {
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.invalid",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.invalid",
        "PATH": "/usr/bin:/bin",
    }

    def run(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=work, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    subprocess.run(["git", "clone", "-q", str(gitops.path), str(work)], check=True)
    run("checkout", "-q", parent)
    for path in run("ls-files").splitlines():
        (work / path).write_text(f"hotfix of {path}\n")
    run("commit", "-qam", "hotfix")
    return run("rev-parse", "HEAD")


def test_cloud_s_short_hashes_come_back_as_full_shas(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    head = gitops.tip(DEV + "-next")
    [stored] = fake.pulls_of(WORKSPACE_REPO)
    assert stored["source"]["commit"]["hash"] == head[:12]  # what Cloud says
    found = plugin.find_open_pull_request(repo=repo, head=DEV + "-next", base=DEV)
    assert found is not None and (found.number, found.head_sha) == (number, head)
    merge = plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert merge == gitops.tip(DEV) and len(merge) == 40
    assert plugin.find_open_pull_request(repo=repo, head=DEV + "-next", base=DEV) is None


def test_a_squash_merge_returns_the_squashed_commit(
    fake: FakeCloud,
    tmp_path: Path,
    repo: Repository,
    gitops: GitOpsRepo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    plugin = plugin_for(fake, tmp_path, mergeStrategy="squash")
    try:
        number = open_dev(plugin, repo, gitops)
        head = gitops.tip(DEV + "-next")
        before = gitops.tip(DEV)
        merge = plugin.merge_pull_request(
            repo=repo, number=number, expected_head_sha=head, message="Promote"
        )
        assert merge == gitops.tip(DEV)
        parents = git(gitops.path, "rev-list", "--parents", "-n1", merge).split()[1:]
        assert parents == [before]
        assert git(gitops.path, "rev-parse", f"{merge}^{{tree}}") == git(
            gitops.path, "rev-parse", f"{head}^{{tree}}"
        )
    finally:
        plugin.close()


def test_statuses_read_latest_per_key_and_the_promoters_checks_link_to_the_commit(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    sha = gitops.tip(DEV)
    for phase in (Phase.PENDING, Phase.FAILURE, Phase.SUCCESS):
        plugin.set_commit_status(
            repo=repo, sha=sha, status=CommitStatus(key="promoter/gates", phase=phase)
        )
    [status] = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert (status.key, status.phase) == ("promoter/gates", Phase.SUCCESS)
    stored = fake.repos[WORKSPACE_REPO].statuses[sha]["promoter/gates"]
    assert stored["url"].endswith(f"/{WORKSPACE_REPO}/commits/{sha}")


def test_reviews_are_participants_approvals_and_requests_for_changes(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    fake.approve(WORKSPACE_REPO, number, "grace")
    fake.request_changes(WORKSPACE_REPO, number, "ada")
    reviews = plugin.get_reviews(repo=repo, number=number)
    assert [(r.user, r.approved, r.name) for r in reviews] == [
        ("grace", True, "Grace"),
        ("ada", False, "Ada"),
    ]
    found = plugin.find_open_pull_request(repo=repo, head=DEV + "-next", base=DEV)
    assert found is not None and found.author == "promoter-bot"


def test_an_oauth_consumer_gets_a_token_and_gets_another_after_a_401(
    fake: FakeCloud, tmp_path: Path, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMOTER_TEST_BB_CLIENT", "consumer-key")
    monkeypatch.setenv("PROMOTER_TEST_BB_SECRET", "consumer-secret")
    issued = ["stale", "oauth-access-token"]
    with FakeTokenEndpoint("consumer-key", "consumer-secret", tokens=issued) as tokens:
        section = {
            "url": fake.url,
            "oauth": {
                "clientId": {"fromEnv": "PROMOTER_TEST_BB_CLIENT"},
                "clientSecret": {"fromEnv": "PROMOTER_TEST_BB_SECRET"},
                "tokenUrl": tokens.url,
            },
        }
        provider = ScmProvider.model_validate({"name": "b", "bitbucketCloud": section})
        plugin = BitbucketCloudScm(provider=provider, state_dir=str(tmp_path))
        try:
            assert plugin.find_open_pull_request(repo=repo, head="a", base="b") is None
            assert plugin.find_open_pull_request(repo=repo, head="a", base="b") is None
        finally:
            plugin.close()
        assert tokens.issued == 2  # "stale" was refused once, the second is kept


def test_a_pull_request_opened_twice_is_the_same_one(
    plugin: BitbucketCloudScm, fake: FakeCloud, repo: Repository, gitops: GitOpsRepo
) -> None:
    number = open_dev(plugin, repo, gitops)
    again = plugin.open_pull_request(
        repo=repo, head=DEV + "-next", base=DEV, title="again", body="", labels=()
    )
    assert again.number == number and again.state is PullRequestState.OPEN
    assert again.labels == ()  # Bitbucket keeps no labels
