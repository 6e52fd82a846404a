"""End to end on Forgejo: the daemon drives the Forgejo plugin out of process, over the fake.

CI reports through the daemon's API (which writes the status to Forgejo through the
plugin); git refs are polled from the bare repository behind the fake. Mid-promotion
the plugin process is killed right after Forgejo created the staging PR and before
the plugin could answer: the reconcile fails, the plugin is restarted, the retried
reconcile finds the PR Forgejo already has, and the promotion completes with one PR
per environment.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.config import parse_config
from promoter.daemon import Runtime
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo

STAGING = "environment/staging"


def config_text(repo: Path, state: Path, url: str) -> str:
    return f"""
scmProviders:
  - name: forgejo
    plugin:
      name: forgejo
      directory: {BIN}
      settings: {{url: "{url}"}}
      secrets: {{token: {{fromEnv: {TOKEN_ENV}}}}}
      timeout: 10s
repositories:
  - name: gitops
    url: {repo}
    path: {FULL_NAME}
    scmProvider: forgejo
    pollInterval: 0.1s
promotionStrategies:
  - name: guestbook
    repository: gitops
    labels: [promotion]
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod}}
daemon:
  stateDir: {state}
  resyncInterval: 30s
  workers: 2
  maxBackoff: 1s
"""


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == branch)


def set_status(client: TestClient, sha: str, key: str) -> None:
    response = client.post(
        f"/api/v1/repositories/gitops/commits/{sha}/statuses",
        json={"key": key, "phase": "success"},
    )
    assert response.status_code == 201, response.text


def promoted(client: TestClient, branch: str, change: str) -> bool:
    return (env_view(client, branch).get("active") or {}).get("drySha") == change


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def daemon(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, Runtime, FakeForgejo]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, gitops.path)
        daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", fake.url)))
        runtime = daemon.runtime
        with TestClient(daemon.app) as client:
            wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
            for branch in ENVIRONMENTS:
                set_status(client, gitops.tip(branch), "health")
            yield client, runtime, fake


def test_a_change_goes_dev_to_staging_to_prod_through_the_forgejo_plugin_despite_a_crash(
    daemon: tuple[TestClient, Runtime, FakeForgejo], gitops: GitOpsRepo
) -> None:
    client, runtime, fake = daemon
    plugin = runtime.plugins["forgejo"]
    assert isinstance(plugin, ExternalScm)
    first_pid = plugin.process.pid if plugin.process else 0
    killed: list[int] = []

    def crash_after_staging_pr_is_created(method: str, path: str, status: int) -> None:
        process = plugin.process
        created = (method, status) == ("POST", 201) and path.endswith("/pulls")
        if created and not killed and fake.pulls_of(FULL_NAME)[-1]["base"]["ref"] == STAGING:
            assert process is not None
            killed.append(process.pid)
            os.kill(process.pid, signal.SIGKILL)
            process.proc.wait()

    fake.on_handled = crash_after_staging_pr_is_created
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        env = wait_for(lambda b=branch: (e := env_view(client, b)).get("pullRequest") and e)
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        wait_for(partial(promoted, client, branch, change), what=f"{branch} promoted")
        set_status(client, gitops.tip(branch), "health")

    assert killed == [first_pid]
    assert plugin.starts >= 2 and plugin.process is not None
    assert plugin.process.pid != first_pid
    prs = fake.pulls_of(FULL_NAME)
    assert sorted((p["base"]["ref"], p["merged"]) for p in prs) == [
        (b, True) for b in sorted(ENVIRONMENTS)
    ]
    for pr in prs:
        branch = pr["base"]["ref"]
        assert pr["merge_commit_sha"] == gitops.tip(branch)
        parents = git(gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents[1] == pr["head"]["sha"]
        assert "promotion" in {label["name"] for label in pr["labels"]}
