"""The Azure DevOps plugin against the fake over real HTTP: completions refused and done,
statuses where Azure shows them, votes, labels. Refusals first."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict
from promoter.models import CommitStatus, Phase, PullRequestState
from scm_plugins.azure_devops import AzureDevOpsScm
from scm_plugins.external.scratch import Scratch

from .conftest import build_plugin
from .fake_azure import FakeAzure
from .fake_git import git
from .fake_state import FakeRepo

PERSON = {"uniqueName": "ada@fabrikam.example", "displayName": "Ada Lovelace"}


@pytest.fixture
def scratch(repo: Repository, bare: Path) -> Scratch:
    return Scratch(repo, str(bare))


def opened(plugin: AzureDevOpsScm, repo: Repository, s: Scratch, content: str = "head") -> int:
    """A pull request from ``head`` (one commit on ``base``) into ``base``; its number."""
    if s.tip(s.branch("base")) is None:
        s.commit(s.branch("base"), "base")
    s.commit(s.branch("head"), content, parent=s.branch("base"))
    pr = plugin.open_pull_request(
        repo=repo, head=s.branch("head"), base=s.branch("base"), title="t", body="b", labels=()
    )
    return pr.number


def test_a_conflicting_completion_is_a_lasting_refusal_and_leaves_the_target(
    plugin: AzureDevOpsScm, repo: Repository, scratch: Scratch
) -> None:
    number = opened(plugin, repo, scratch)
    base = scratch.commit(scratch.branch("base"), "another line")  # the same file, changed
    head = scratch.tip(scratch.branch("head"))
    assert head is not None
    with pytest.raises(ScmConflict, match="merge conflicts") as caught:
        plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert caught.value.lasting
    assert scratch.tip(scratch.branch("base")) == base


def test_a_completion_blocked_by_branch_policies_says_which_have_not_approved(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    azure.require_reviewers(fake_repo, count=1)
    azure.require_status(fake_repo, "promoter", "previous-environment")
    number = opened(plugin, repo, scratch)
    head = scratch.tip(scratch.branch("head"))
    assert head is not None
    with pytest.raises(ScmConflict) as caught:
        plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert caught.value.lasting
    assert str(caught.value) == (
        f"pull request {number} cannot be completed: Minimum number of reviewers: rejected; "
        "Status (promoter/previous-environment): queued"
    )
    [pr] = azure.pulls(fake_repo)
    assert pr["status"] == "active"
    azure.vote(fake_repo, number, PERSON, 10)
    ok = CommitStatus(key="promoter/previous-environment", phase=Phase.SUCCESS)
    plugin.set_commit_status(repo=repo, sha=head, status=ok)  # on the PR's iteration
    sha = plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert scratch.tip(scratch.branch("base")) == sha


def test_a_completion_azure_queues_is_read_until_it_is_done(
    azure: FakeAzure, plugin: AzureDevOpsScm, repo: Repository, scratch: Scratch
) -> None:
    azure.complete_later = True
    waited: list[float] = []
    plugin._completion._sleep = waited.append  # no real wait
    number = opened(plugin, repo, scratch)
    head = scratch.tip(scratch.branch("head"))
    assert head is not None
    sha = plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert waited == [0.5]
    assert scratch.tip(scratch.branch("base")) == sha


def test_a_completion_retried_after_it_went_through_returns_its_merge_commit(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    number = opened(plugin, repo, scratch)
    head = scratch.tip(scratch.branch("head"))
    assert head is not None
    azure.person_completes(fake_repo, number, PERSON)  # or the promoter's answer was lost
    sha = plugin.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert scratch.tip(scratch.branch("base")) == sha


def test_an_abandoned_pull_request_is_not_open_and_cannot_be_updated(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    number = opened(plugin, repo, scratch)
    azure.person_abandons(fake_repo, number)
    found = plugin.find_open_pull_request(
        repo=repo, head=scratch.branch("head"), base=scratch.branch("base")
    )
    assert found is None
    with pytest.raises(ScmConflict, match=r"abandoned|cannot be edited"):
        plugin.update_pull_request(repo=repo, number=number, title="x", body="", labels=())


@pytest.mark.parametrize(
    ("strategy", "parents"),
    [("noFastForward", 2), ("squash", 1), ("rebase", 1), ("rebaseMerge", 2)],
)
def test_each_merge_strategy_completes_as_azure_does(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    repo: Repository,
    scratch: Scratch,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    strategy: str,
    parents: int,
) -> None:
    plugin = build_plugin(azure.url, tmp_path, monkeypatch, mergeStrategy=strategy)
    lines = [str(n) for n in range(1, 9)]
    head, base = scratch.branch("head"), scratch.branch("base")
    try:
        scratch.commit(base, "\n".join(lines))
        scratch.commit(head, "\n".join([*lines[:-1], "8 head"]), parent=base)
        scratch.commit(head, "\n".join([*lines[:-1], "8 head more"]))
        base_tip = scratch.commit(base, "\n".join(["1 base", *lines[1:]]))  # moved on: no FF
        pr = plugin.open_pull_request(
            repo=repo, head=head, base=base, title="t", body="", labels=()
        )
        sha = plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )
    finally:
        plugin.close()
    assert scratch.tip(base) == sha != base_tip
    found = git(fake_repo.path, "rev-list", "--parents", "-n1", sha).split()
    assert len(found) == 1 + parents


def test_the_promoter_s_check_goes_on_the_pull_request_s_iteration_and_reads_back(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    azure.require_status(fake_repo, "promoter", "previous-environment", reset=True)
    number = opened(plugin, repo, scratch)
    moved = scratch.commit(scratch.branch("head"), "head moved")  # iteration 2
    pr = plugin.find_open_pull_request(
        repo=repo, head=scratch.branch("head"), base=scratch.branch("base")
    )
    assert pr is not None and pr.head_sha == moved
    check = CommitStatus(key="promoter/previous-environment", phase=Phase.PENDING, description="w")
    plugin.set_commit_status(repo=repo, sha=moved, status=check)
    ci = CommitStatus(key="ci", phase=Phase.SUCCESS)
    plugin.set_commit_status(repo=repo, sha=moved, status=ci)
    [posted] = fake_repo.pr_statuses[number]
    assert (posted["context"], posted["iterationId"]) == (
        {"genre": "promoter", "name": "previous-environment"},
        2,
    )
    assert [s["context"] for s in fake_repo.commit_statuses[moved]] == [{"name": "ci"}]
    found = {s.key: s.phase for s in plugin.get_commit_statuses(repo=repo, sha=moved)}
    assert found == {"ci": Phase.SUCCESS, "promoter/previous-environment": Phase.PENDING}
    only = plugin.get_commit_statuses(repo=repo, sha=moved, keys=["ci"])
    assert [s.key for s in only] == ["ci"]  # the commit had it: the PR's were not read


def test_a_commit_s_statuses_are_read_again_for_nothing_when_unchanged(
    azure: FakeAzure, plugin: AzureDevOpsScm, repo: Repository, scratch: Scratch
) -> None:
    sha = scratch.commit(scratch.branch("base"), "base")
    plugin.set_commit_status(repo=repo, sha=sha, status=CommitStatus(key="ci", phase=Phase.SUCCESS))
    first = plugin.get_commit_statuses(repo=repo, sha=sha)
    second = plugin.get_commit_statuses(repo=repo, sha=sha)
    assert first == second
    assert [c.status for c in azure.calls if c.method == "GET"][-2:] == [200, 304]


def test_votes_decide_only_at_ten_and_minus_ten(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    number = opened(plugin, repo, scratch)
    people = {"a@x": 10, "b@x": 5, "c@x": 0, "d@x": -5, "e@x": -10}
    for name, vote in people.items():
        azure.vote(fake_repo, number, {"uniqueName": name, "displayName": name}, vote)
    group = {"uniqueName": "team", "displayName": "[P]\\Team", "isContainer": True}
    azure.vote(fake_repo, number, group, 10)
    reviews = plugin.get_reviews(repo=repo, number=number)
    assert [(r.user, r.approved) for r in reviews] == [("a@x", True), ("e@x", False)]


def test_labels_are_added_and_taken_off_and_a_long_body_is_cut(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    scratch.commit(scratch.branch("base"), "base")
    scratch.commit(scratch.branch("head"), "head", parent=scratch.branch("base"))
    pr = plugin.open_pull_request(
        repo=repo,
        head=scratch.branch("head"),
        base=scratch.branch("base"),
        title="t",
        body="x" * 5000,
        labels=("promotion", "old"),
    )
    assert set(pr.labels) == {"promotion", "old"} and len(pr.body) <= 4000
    updated = plugin.update_pull_request(
        repo=repo, number=pr.number, title="t2", body="b", labels=("promotion", "new")
    )
    [stored] = azure.pulls(fake_repo)
    assert {x["name"] for x in stored["labels"]} == {"promotion", "new"} == set(updated.labels)
    assert updated.state is PullRequestState.OPEN and stored["title"] == "t2"


def test_the_promoter_s_check_on_a_commit_heading_no_pull_request_is_a_commit_status(
    azure: FakeAzure,
    fake_repo: FakeRepo,
    plugin: AzureDevOpsScm,
    repo: Repository,
    scratch: Scratch,
) -> None:
    sha = scratch.commit(scratch.branch("base"), "base")
    hold = CommitStatus(key="promoter/hold", phase=Phase.FAILURE, description="held")
    plugin.set_commit_status(repo=repo, sha=sha, status=hold)
    assert [s["context"] for s in fake_repo.commit_statuses[sha]] == [
        {"genre": "promoter", "name": "hold"}
    ]
    found = plugin.get_commit_statuses(repo=repo, sha=sha, keys=["promoter/hold"])
    assert [(s.key, s.phase) for s in found] == [("promoter/hold", Phase.FAILURE)]
