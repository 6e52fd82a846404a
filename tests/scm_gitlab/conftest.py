"""Fixtures for the GitLab plugin's tests: a real bare repository, the fake GitLab, the plugin."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider
from promoter.metrics import REGISTRY
from scm_plugins.gitlab import GitLabScm
from tests.scm_gitlab.fake_gitlab import FakeGitLab

TOKEN = "glpat-SeCrEt-token-4a7b9c"
PROJECT = "group/sub/app"
TOKEN_ENV = "PROMOTER_TEST_GITLAB_TOKEN"


def git(git_dir: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(git_dir: Path, branch: str, files: dict[str, str], message: str) -> str:
    """A commit on ``branch`` (created if absent) whose tree is exactly ``files``."""
    entries = []
    for name, content in sorted(files.items()):
        blob = git(git_dir, "hash-object", "-w", "--stdin", stdin=content)
        entries.append(f"100644 blob {blob}\t{name}")
    tree = git(git_dir, "mktree", stdin="\n".join(entries) + "\n")
    parent = head(git_dir, branch)
    parents = ["-p", parent] if parent else []
    sha = git(git_dir, "commit-tree", tree, *parents, "-m", message)
    git(git_dir, "update-ref", f"refs/heads/{branch}", sha)
    return sha


def head(git_dir: Path, branch: str) -> str | None:
    try:
        return git(git_dir, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    except subprocess.CalledProcessError:
        return None


def scm_calls(**labels: str) -> float:
    """Sum of ``promoter_scm_calls_total{provider="gitlab", **labels}``."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name != "promoter_scm_calls_total":
                continue
            wanted = {"provider": "gitlab", **labels}
            if all(sample.labels.get(k) == v for k, v in wanted.items()):
                total += sample.value
    return total


@pytest.fixture
def bare_repo(tmp_path: Path) -> Path:
    """A bare repository with environment/dev active and a proposed environment/dev-next."""
    git_dir = tmp_path / "app.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(git_dir)], check=True)
    commit(git_dir, "environment/dev", {"app.yaml": "image: v1\n"}, "hydrate v1")
    git(git_dir, "branch", "environment/dev-next", "environment/dev")
    commit(git_dir, "environment/dev-next", {"app.yaml": "image: v2\n"}, "hydrate v2")
    return git_dir


@pytest.fixture
def fake(genuine_fixtures: Path, bare_repo: Path) -> Iterator[FakeGitLab]:
    gitlab = FakeGitLab(fixtures=genuine_fixtures, token=TOKEN)
    gitlab.add_project(PROJECT, git_dir=bare_repo, project_id=4242)
    with gitlab:
        yield gitlab


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch, fake: FakeGitLab) -> ScmProvider:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return ScmProvider.model_validate(
        {"name": "gl", "gitlab": {"url": fake.url, "token": {"fromEnv": TOKEN_ENV}}}
    )


@pytest.fixture
def repo(fake: FakeGitLab) -> Repository:
    return Repository(name="app", url=f"{fake.url}/{PROJECT}.git", scm_provider="gl")


@pytest.fixture
def plugin(provider: ScmProvider, tmp_path: Path) -> Iterator[GitLabScm]:
    scm = GitLabScm(provider=provider, state_dir=str(tmp_path / "state"))
    yield scm
    scm.close()
