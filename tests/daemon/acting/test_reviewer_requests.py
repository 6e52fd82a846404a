"""Reviewer requests as the SCM takes them, over the fake GitLab: a username GitLab does not
know refuses the whole request, so each name is asked alone and the others are asked."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider
from promoter.daemon.acting.reviewer_requests import ask
from scm_plugins.gitlab import GitLabScm
from tests.scm_gitlab.conftest import PROJECT, TOKEN, TOKEN_ENV, commit, git
from tests.scm_gitlab.fake_gitlab import FakeGitLab


@pytest.fixture
def gitlab(
    genuine_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeGitLab, GitLabScm, Repository]]:
    bare = tmp_path / "app.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    commit(bare, "environment/dev", {"app.yaml": "image: v1\n"}, "hydrate v1")
    git(bare, "branch", "environment/dev-next", "environment/dev")
    commit(bare, "environment/dev-next", {"app.yaml": "image: v2\n"}, "hydrate v2")
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGitLab(fixtures=genuine_fixtures, token=TOKEN) as fake:
        fake.add_project(PROJECT, git_dir=bare, project_id=4242)
        provider = ScmProvider.model_validate(
            {"name": "gl", "gitlab": {"url": fake.url, "token": {"fromEnv": TOKEN_ENV}}}
        )
        plugin = GitLabScm(provider=provider, state_dir=str(tmp_path / "state"))
        repo = Repository(name="app", url=f"{fake.url}/{PROJECT}.git", scm_provider="gl")
        yield fake, plugin, repo
        plugin.close()


def test_a_user_gitlab_does_not_know_leaves_the_others_asked(
    gitlab: tuple[FakeGitLab, GitLabScm, Repository],
) -> None:
    fake, plugin, repo = gitlab
    fake.add_user("ada")
    mr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    asked = ask(plugin, repo, mr.number, ["ghost", "ada"], [])
    assert asked.users == ["ada"]
    assert asked.refused == ["ghost (refused: GitLab has no user 'ghost')"]
    reviewers = fake.merge_requests(PROJECT)[0]["reviewers"]
    assert [r["username"] for r in reviewers] == ["ada"]


def test_nothing_to_ask_makes_no_call(gitlab: tuple[FakeGitLab, GitLabScm, Repository]) -> None:
    fake, plugin, repo = gitlab
    assert ask(plugin, repo, 1, [], []).refused == []
    assert fake.requests == []
