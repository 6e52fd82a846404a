"""GitLab deployments through the plugin and the fake GitLab (bodies from GitLab's docs
example as python-gitlab's tests use it): created running in an environment GitLab makes,
success and failure as GitLab's words, inactive needs no call, and an unknown deployment is
not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.errors import ScmNotFound
from scm_plugins.gitlab import GitLabScm
from scm_plugins.protocol import Deployments

from .conftest import head, scm_calls
from .fake_gitlab import FakeGitLab


def test_a_deployment_is_created_running_and_turns_success(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository, bare_repo: Path
) -> None:
    assert isinstance(plugin, Deployments)
    sha = head(bare_repo, "environment/dev") or ""
    common = {"repo": repo, "description": "", "url": "", "log_url": ""}
    made = plugin.create_deployment(environment="prod", ref="environment/prod", sha=sha, **common)
    [project] = fake.projects.values()
    [stored] = project.deployments
    assert (str(stored["id"]), stored["status"], stored["sha"]) == (made, "running", sha)
    assert stored["environment"]["name"] == "prod" and "prod" in project.environments
    plugin.set_deployment_status(deployment_id=made, environment="prod", state="success", **common)
    assert stored["status"] == "success"
    calls = scm_calls()
    plugin.set_deployment_status(deployment_id=made, environment="prod", state="inactive", **common)
    assert scm_calls() == calls and stored["status"] == "success"
    plugin.set_deployment_status(deployment_id=made, environment="prod", state="failure", **common)
    assert stored["status"] == "failed"


def test_a_status_for_a_deployment_gitlab_does_not_have_is_not_found(
    plugin: GitLabScm, repo: Repository
) -> None:
    with pytest.raises(ScmNotFound):
        plugin.set_deployment_status(
            repo=repo,
            deployment_id="999999",
            environment="prod",
            state="success",
            description="",
            url="",
            log_url="",
        )
