"""Gates from GitLab (commit statuses and pipelines) and the promoter's own statuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider
from promoter.models import CommitStatus, Phase
from scm_plugins.gitlab import GitLabScm
from scm_plugins.gitlab.statuses import phase_of
from tests.scm_gitlab.conftest import PROJECT, head, scm_calls
from tests.scm_gitlab.fake_gitlab import FakeGitLab


@pytest.mark.parametrize(
    ("gitlab_status", "phase"),
    [
        ("success", Phase.SUCCESS),
        ("skipped", Phase.SUCCESS),
        ("created", Phase.PENDING),
        ("waiting_for_resource", Phase.PENDING),
        ("preparing", Phase.PENDING),
        ("pending", Phase.PENDING),
        ("running", Phase.PENDING),
        ("scheduled", Phase.PENDING),
        ("manual", Phase.PENDING),
        ("failed", Phase.FAILURE),
        ("canceled", Phase.FAILURE),
        ("a-state-gitlab-adds-later", Phase.PENDING),
    ],
)
def test_each_gitlab_state_maps_to_one_phase(gitlab_status: str, phase: Phase) -> None:
    assert phase_of(gitlab_status) is phase


def test_a_manual_job_passes_only_when_it_is_allowed_to_fail() -> None:
    assert phase_of("manual", allow_failure=True) is Phase.SUCCESS
    assert phase_of("manual", allow_failure=False) is Phase.PENDING


def gates(plugin: GitLabScm, repo: Repository, sha: str) -> dict[str, CommitStatus]:
    return {s.key: s for s in plugin.get_commit_statuses(repo=repo, sha=sha)}


@pytest.fixture
def sha(bare_repo: Path) -> str:
    proposed = head(bare_repo, "environment/dev-next")
    assert proposed
    return proposed


def test_the_latest_status_of_each_name_and_the_latest_pipeline_are_the_gates(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    fake.add_status(PROJECT, sha, "lint", "failed")
    fake.add_status(PROJECT, sha, "lint", "success")
    fake.add_status(PROJECT, sha, "deploy-preview", "manual", allow_failure=True)
    fake.add_pipeline(PROJECT, sha, "failed")
    pipeline = fake.add_pipeline(PROJECT, sha, "running")
    found = gates(plugin, repo, sha)
    assert {k: s.phase for k, s in found.items()} == {
        "lint": Phase.SUCCESS,
        "deploy-preview": Phase.SUCCESS,
        "pipeline": Phase.PENDING,
    }
    assert found["pipeline"].url == pipeline["web_url"]
    assert all(s.source == "gitlab" for s in found.values())


def test_the_pipeline_gate_key_is_configurable(
    monkeypatch: pytest.MonkeyPatch, fake: FakeGitLab, repo: Repository, sha: str
) -> None:
    monkeypatch.setenv("KEY_TOKEN", fake.token)
    provider = ScmProvider.model_validate(
        {
            "name": "gl",
            "gitlab": {
                "url": fake.url,
                "token": {"fromEnv": "KEY_TOKEN"},
                "pipelineGateKey": "gitlab-ci",
            },
        }
    )
    plugin = GitLabScm(provider=provider, state_dir="unused")
    fake.add_pipeline(PROJECT, sha, "success")
    assert gates(plugin, repo, sha)["gitlab-ci"].phase is Phase.SUCCESS
    # GitLab adds the promoter's statuses to that pipeline: its summary must not wait for it
    assert plugin.folded_gate_keys == {"gitlab-ci"}
    plugin.close()


def test_a_sha_without_pipeline_has_no_pipeline_gate(
    plugin: GitLabScm, repo: Repository, sha: str
) -> None:
    assert gates(plugin, repo, sha) == {}


def test_the_external_pipeline_that_gathers_commit_statuses_is_not_the_pipeline(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    plugin.set_commit_status(
        repo=repo,
        sha=sha,
        status=CommitStatus(key="promoter/previous-environment", phase=Phase.FAILURE),
    )
    assert [p["source"] for p in fake.projects[PROJECT].pipelines] == ["external"]
    assert "pipeline" not in gates(plugin, repo, sha)
    fake.add_pipeline(PROJECT, sha, "success", source="push")
    assert gates(plugin, repo, sha)["pipeline"].phase is Phase.SUCCESS


def test_the_promoters_own_gate_shows_as_a_commit_status_named_by_its_key(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    status = CommitStatus(
        key="promoter/previous-environment",
        phase=Phase.PENDING,
        description="environment/dev is not healthy yet",
        url="http://promoter.example/strategies/guestbook",
    )
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    [written] = fake.projects[PROJECT].statuses
    assert (written["name"], written["status"], written["target_url"]) == (
        "promoter/previous-environment",
        "pending",
        "http://promoter.example/strategies/guestbook",
    )
    read = gates(plugin, repo, sha)["promoter/previous-environment"]
    assert (read.phase, read.description, read.url) == (
        Phase.PENDING,
        status.description,
        status.url,
    )


def test_writing_pending_twice_is_accepted_though_gitlab_refuses_the_transition(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    status = CommitStatus(key="promoter/previous-environment", phase=Phase.PENDING)
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    errors_before = scm_calls(operation="set_commit_status", outcome="error")
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    assert scm_calls(operation="set_commit_status", outcome="error") == errors_before
    plugin.set_commit_status(
        repo=repo, sha=sha, status=status.model_copy(update={"phase": Phase.SUCCESS})
    )
    assert gates(plugin, repo, sha)["promoter/previous-environment"].phase is Phase.SUCCESS


def test_a_long_description_is_cut_to_what_gitlab_stores(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    status = CommitStatus(key="k", phase=Phase.SUCCESS, description="x" * 1000)
    plugin.set_commit_status(repo=repo, sha=sha, status=status)
    assert len(fake.projects[PROJECT].statuses[0]["description"]) == 255


def test_statuses_beyond_the_first_page_are_read(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    for index in range(130):
        fake.add_status(PROJECT, sha, f"job-{index:03}", "success")
    assert len(gates(plugin, repo, sha)) == 130


def test_the_re_read_before_a_merge_reads_only_what_its_keys_need(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, sha: str
) -> None:
    fake.add_status(PROJECT, sha, "lint", "success")
    fake.add_pipeline(PROJECT, sha, "success")
    before = scm_calls()
    only_pipeline = plugin.get_commit_statuses(repo=repo, sha=sha, keys=("pipeline",))
    assert [s.key for s in only_pipeline] == ["pipeline"]
    assert scm_calls() - before == 1
    before = scm_calls()
    only_lint = plugin.get_commit_statuses(repo=repo, sha=sha, keys=("lint",))
    assert [s.key for s in only_lint] == ["lint"]
    assert scm_calls() - before == 1
