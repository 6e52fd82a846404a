"""A CommitStatus the SCM will not take is reported with the SCM's words and tried again with
backoff, at once when what it depends on changes; its conditions never go stale."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.config import Config, Repository
from promoter.errors import ScmConflict
from promoter.kube.resources import commit_status_sync
from promoter.kube.resources.config_source import SecretFiles, assemble
from promoter.kube.resources.specs import COMMIT_STATUS_LABEL
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.models import CommitStatus
from scm_plugins.protocol import ScmPlugin
from tests.kube.cluster import Cluster, fake_cluster, local_objects, wait_until
from tests.kube.shard_helpers import fleet
from tests.kube.test_promotion import ENVS, at

UNKNOWN = "3f1e5ab0c2d4e6f8091a2b3c4d5e6f708192a3b4"


class GitHubLikeStatuses:
    """The local SCM, refusing a status on a SHA the repository does not have as GitHub
    does (422 "No commit found for SHA"), and recording when each write was tried."""

    def __init__(self, inner: ScmPlugin) -> None:
        self.inner = inner
        self.tried: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        with self._lock:
            self.tried.append((sha, time.monotonic()))
        known = subprocess.run(
            ["git", "-C", repo.url, "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True
        )
        if known.returncode != 0:
            raise ScmConflict(f"GitHub answered 422: No commit found for SHA: {sha}")
        self.inner.set_commit_status(repo=repo, sha=sha, status=status)

    def attempts(self, sha: str) -> list[float]:
        with self._lock:
            return [at for tried, at in self.tried if tried == sha]


def like_github(scms: list[GitHubLikeStatuses]) -> Callable[[ScmPlugin], ScmPlugin]:
    """Wraps each replica's plugin in ``GitHubLikeStatuses``, kept in ``scms``."""

    def wrap(plugin: ScmPlugin) -> ScmPlugin:
        scms.append(GitHubLikeStatuses(plugin))
        return scms[-1]  # type: ignore[return-value]

    return wrap


def health(cluster: Cluster, name: str, sha: str, repository: str = "gitops") -> None:
    spec = {"gitRepositoryRef": {"name": repository}, "sha": sha, "phase": "success"}
    cluster.create("commitstatuses", name, spec, labels={COMMIT_STATUS_LABEL: "health"})


def ready(cluster: Cluster, name: str) -> dict[str, Any]:
    conditions = cluster.status("commitstatuses", name).get("conditions") or [{}]
    return dict(conditions[0])


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(commit_status_sync, "FIRST_RETRY", 0.2, raising=False)
    repo = GitOpsRepo.create(tmp_path, ENVS)
    scms: list[GitHubLikeStatuses] = []
    with fake_cluster(tmp_path) as cluster:
        cluster.replica("a", scm=like_github(scms)).start()
        local_objects(cluster, repo.path)
        wait_until(lambda: at(cluster, git(repo.path, "rev-parse", "main")), what="first sync")
        yield cluster, repo, scms


def test_a_sha_the_scm_does_not_know_backs_off_with_its_words_until_the_spec_changes(
    started: Any,
) -> None:
    cluster, repo, scms = started
    health(cluster, "dev-health", UNKNOWN)

    def refused() -> dict[str, Any] | None:
        condition = ready(cluster, "dev-health")
        return condition if condition.get("reason") == "MirrorFailed" else None

    condition = wait_until(refused, what="the refusal in the object's condition")
    assert condition["status"] == "False"
    assert f"No commit found for SHA: {UNKNOWN}" in condition["message"]

    def tried() -> list[float]:
        return [at for scm in scms for at in scm.attempts(UNKNOWN)]

    wait_until(lambda: len(tried()) >= 3, what="three tries")  # at 0, 0.2, 0.6 s, ...
    sync = cluster.replicas[0].commit_statuses
    frozen = sync.clock()
    sync.clock = lambda: frozen  # no retry falls due from here on: only a change helps
    gaps = [b - a for a, b in itertools.pairwise(tried())]
    assert all(gap >= 0.2 * 2**n * 0.95 for n, gap in enumerate(gaps)), gaps  # 0.2, 0.4, 0.8

    running = git(repo.path, "rev-parse", "environment/dev")
    cluster.patch_spec(
        "commitstatuses",
        "dev-health",
        {"gitRepositoryRef": {"name": "gitops"}, "sha": running, "phase": "success"},
    )
    mirrored = wait_until(
        lambda: cluster.status("commitstatuses", "dev-health").get("mirroredPhase") == "success",
        what="the fixed object mirrored",
    )
    assert mirrored  # on the change, not at a retry: none falls due any more
    assert ready(cluster, "dev-health")["status"] == "True"


def test_a_missing_git_repository_condition_clears_once_the_repository_exists(
    started: Any,
) -> None:
    cluster, repo, _ = started
    running = git(repo.path, "rev-parse", "environment/dev")
    health(cluster, "later-health", running, repository="later")
    wait_until(
        lambda: (
            ready(cluster, "later-health").get("message")
            == "GitRepository later is missing or invalid"
        ),
        what="the missing repository in the condition",
    )
    cluster.create(
        "gitrepositories", "later", {"url": str(repo.path), "scmProviderRef": {"name": "local"}}
    )
    wait_until(
        lambda: ready(cluster, "later-health").get("status") == "True",
        what="the condition cleared by the new repository",
    )
    assert cluster.status("commitstatuses", "later-health")["mirroredPhase"] == "success"


def test_a_condition_message_keeps_its_quotes(tmp_path: Path) -> None:
    provider = {
        "kind": "ScmProvider",
        "metadata": {"namespace": "team", "name": "github"},
        "spec": {"secretRef": {"name": "creds"}, "github": {}},
    }

    def secret(namespace: str, name: str) -> Mapping[str, str]:
        return {"other": "eA=="}

    assembled = assemble(
        Config(), {("ScmProvider", "team", "github"): provider}, SecretFiles(tmp_path, secret)
    )
    assert assembled.problems[("ScmProvider", "team", "github")] == (
        "Secret creds has no key 'token'"
    )


def test_a_refused_status_is_tried_again_on_a_repository_change_though_the_workers_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed GitRepository builds a new runtime; when its workers fail to start, the
    build is tried again later and the workers are started by the next step, and the
    CommitStatus objects of that repository are still looked at again at once, not at
    their next retry (sharded, nothing else brings them back)."""
    monkeypatch.setattr(commit_status_sync, "FIRST_RETRY", 30.0, raising=False)
    scms: list[GitHubLikeStatuses] = []
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 1)
        a = cluster.sharded("a", scm=like_github(scms))
        wait_until(a.ready, what="a joined")
        health(cluster, "dev-health", UNKNOWN, repository="repo-0")
        wait_until(
            lambda: ready(cluster, "dev-health").get("reason") == "MirrorFailed",
            what="the refusal in the object's condition",
        )
        starts: list[float] = []
        start = ClusterRuntime.start

        def failing_once(self: ClusterRuntime) -> None:
            starts.append(time.monotonic())
            if len(starts) == 1:
                raise RuntimeError("the workers could not start")
            start(self)

        monkeypatch.setattr(ClusterRuntime, "start", failing_once)
        tried = len([at for scm in scms for at in scm.attempts(UNKNOWN)])
        url = str(repos["app-0"].path)
        cluster.patch_spec(
            "gitrepositories",
            "repo-0",
            {"url": url, "scmProviderRef": {"name": "local"}, "pollInterval": "30s"},
        )
        wait_until(lambda: len(starts) >= 2 and a.runtime.started, what="the workers started")
        wait_until(
            lambda: len([at for scm in scms for at in scm.attempts(UNKNOWN)]) > tried,
            timeout=20,
            what="the refused status tried again, not at its retry 30 s away",
        )
