"""The state directory is resolved once, at start; an unusable one is refused with its
path; a repository that cannot be read shows on its strategy, not only in /readyz."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests import processes
from tests.support import ENVIRONMENTS, GitOpsRepo, git_children, local_config, wait_for

from .test_local_promotion import env_view, wait_state

SERVE = (sys.executable, "-m", "promoter.cli", "serve")


def test_a_relative_state_dir_is_resolved_at_start_and_its_mirrors_do_not_nest(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    daemon = Daemon(local_config(gitops.path, Path(".promoter")))
    monkeypatch.chdir(elsewhere)  # git and the daemon's threads run wherever they are
    assert daemon.runtime.state_dir == work / ".promoter"
    with TestClient(daemon.app) as client:
        wait_state(client, ENVIRONMENTS[-1], "up-to-date")
    assert (work / ".promoter" / "mirrors" / "gitops.git" / "HEAD").is_file()
    assert not (work / ".promoter" / "mirrors" / "mirrors").exists()
    assert list(elsewhere.iterdir()) == []


def test_a_stopped_daemon_leaves_no_git_process_in_its_mirrors(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    mirror = tmp_path / "state" / "mirrors" / "gitops.git"
    with TestClient(daemon.app) as client:
        wait_state(client, ENVIRONMENTS[-1], "up-to-date")
        assert git_children(mirror), "the mirror reads through a persistent git process"
    assert git_children(mirror) == {}


@pytest.mark.parametrize("where", ["/proc/promoter-state", "{tmp}/a-file/state"])
def test_a_state_dir_that_cannot_be_created_is_refused_with_its_path(
    gitops: GitOpsRepo, tmp_path: Path, where: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    state = Path(where.format(tmp=tmp_path))
    config = tmp_path / "promoter.yaml"
    config.write_text(
        "scmProviders: [{name: local, local: {}}]\n"
        f"repositories: [{{name: gitops, url: {gitops.path}, scmProvider: local}}]\n"
        "promotionStrategies:\n"
        "  - {name: g, repository: gitops, environments: [{branch: environment/dev}]}\n"
        "daemon: {port: 0}\n"
    )
    served = processes.run(
        [*SERVE, "--config", str(config), "--state-dir", str(state)],
        text=True,
        timeout=60,
    )
    assert served.returncode == 2
    assert "Traceback" not in served.stderr
    assert served.stderr.startswith(
        f"daemon.stateDir: cannot use {state} as the state directory: "
    ), served.stderr


def test_a_repository_that_cannot_be_read_shows_on_its_strategy_and_heals(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    daemon = Daemon(local_config(gitops.path, tmp_path / "state", maxBackoff="0.5s"))
    with TestClient(daemon.app) as client:
        wait_state(client, ENVIRONMENTS[-1], "up-to-date")
        moved = gitops.path.rename(tmp_path / "moved.git")
        for branch in ENVIRONMENTS:
            env = wait_state(client, branch, "error")
            assert env["reason"].startswith("last reconcile failed: "), env
        assert client.get("/readyz").status_code == 503
        detail = client.get("/api/v1/strategies/guestbook").json()
        assert detail["error"]
        moved.rename(gitops.path)
        wait_for(
            lambda: all(env_view(client, b)["state"] == "up-to-date" for b in ENVIRONMENTS),
            what="every environment up to date again",
        )
