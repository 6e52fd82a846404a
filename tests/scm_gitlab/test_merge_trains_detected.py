"""GitLab merge trains found without ``mergeQueue`` in the configuration: the project says
whether it runs them (``merge_trains_enabled`` with ``merge_pipelines_enabled``), read once
for all its branches; with trains on, a promotion MR is added to the train, not merged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config import Repository
from promoter.config.loader import parse_config
from promoter.daemon import QueueDetection
from promoter.wiring import Daemon
from scm_plugins.gitlab import GitLabScm
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import PROJECT, TOKEN, TOKEN_ENV
from .fake_gitlab import FakeGitLab
from .test_end_to_end import HOOK_ENV, HOOK_TOKEN, PROJECT_ID, Harness, config_text

DEV = "environment/dev"


def project_reads(fake: FakeGitLab) -> int:
    own = {f"/projects/{PROJECT_ID}", "/projects/" + PROJECT.replace("/", "%2F")}
    return sum(1 for method, path in fake.requests if method == "GET" and path in own)


@pytest.mark.parametrize(
    ("trains", "pipelines", "required"),
    [(True, True, True), (False, False, False), (True, False, False)],
)
def test_a_project_runs_merge_trains_only_with_merged_results_pipelines(
    plugin: GitLabScm,
    fake: FakeGitLab,
    repo: Repository,
    trains: bool,
    pipelines: bool,
    required: bool,
) -> None:
    project = fake.projects[PROJECT]
    project.merge_trains = trains
    if trains and not pipelines:
        fake.fail_next(
            "GET",
            r"^/projects/[^/]+$",
            200,
            body={**fake.templates["project"], "merge_trains_enabled": True},
        )
    assert plugin.merge_queue_required(repo=repo, branch=DEV) is required


def test_a_project_without_the_premium_fields_runs_no_merge_train(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    fake.fail_next("GET", r"^/projects/[^/]+$", 200, body=fake.templates["project"])
    assert "merge_trains_enabled" not in fake.templates["project"]
    assert plugin.merge_queue_required(repo=repo, branch=DEV) is False


def test_the_projects_answer_covers_every_branch_and_a_403_is_no_train_asked_once(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    fake.projects[PROJECT].merge_trains = True
    detection = QueueDetection()
    assert all(detection.required(plugin, repo, branch) for branch in ENVIRONMENTS)
    assert project_reads(fake) == 1
    fake.fail_next("GET", r"^/projects/[^/]+$", 403, times=100)
    again = QueueDetection()
    assert not any(again.required(plugin, repo, branch) for branch in ENVIRONMENTS * 3)
    assert project_reads(fake) == 2


@pytest.fixture
def harness(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    """The daemon over a project that runs merge trains, no ``mergeQueue`` configured."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_TOKEN)
    gitops = GitOpsRepo.create(tmp_path)
    fake = FakeGitLab(fixtures=genuine_fixtures, token=TOKEN)
    fake.add_project(PROJECT, git_dir=gitops.path, project_id=PROJECT_ID).merge_trains = True
    hook = json.loads(
        (genuine_fixtures / "gitlab" / "webhooks" / "go-gitlab" / "pipeline.json").read_text()
    )
    with fake:
        text = config_text(gitops.path, tmp_path / "state", fake.url)
        assert "mergeQueue" not in text
        daemon = Daemon(parse_config(text))
        with TestClient(daemon.app) as client:
            h = Harness(daemon.runtime, client, fake, gitops, hook)
            h.wait_state("environment/prod", "up-to-date")
            yield h


def test_with_merge_trains_on_a_promotion_mr_is_added_to_the_train(harness: Harness) -> None:
    h = harness
    h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    mr = h.open_mr(DEV)
    h.pipeline(DEV, "success")
    project = h.fake.projects[PROJECT]
    wait_for(lambda: mr["iid"] in project.train, what="the MR on the train")
    car = project.train[mr["iid"]]
    assert car["pipeline"]["sha"] == h.gitops.tip(f"{DEV}-next")
    merges = [p for m, p in h.fake.requests if m == "PUT" and p.endswith("/merge")]
    assert merges == []
    assert project_reads(h.fake) == 1
