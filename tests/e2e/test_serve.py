"""``promoter serve`` as a real process: JSON logs, the CLI against it, a clean SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from promoter.cli.main import main
from promoter.http import free_port
from tests import processes
from tests.support import GitOpsRepo, wait_for


def write_config(tmp_path: Path, gitops: GitOpsRepo, port: int) -> Path:
    path = tmp_path / "promoter.yaml"
    path.write_text(
        f"""
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {gitops.path}, scmProvider: local}}]
promotionStrategies:
  - name: guestbook
    repository: gitops
    proposedCommitStatuses: [{{key: ci}}]
    environments: [{{branch: environment/dev}}, {{branch: environment/staging}}]
daemon: {{stateDir: {tmp_path / "state"}, port: {port}, pollInterval: 0.2s}}
"""
    )
    return path


def test_serve_logs_json_answers_the_cli_and_stops_cleanly_on_sigterm(
    tmp_path: Path, capsys: object
) -> None:
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev", "environment/staging"])
    port = free_port()
    config = write_config(tmp_path, gitops, port)
    log_file = tmp_path / "daemon.log"
    with log_file.open("w") as log:
        proc = processes.start(
            [sys.executable, "-m", "promoter.cli", "serve", "--config", str(config)],
            stderr=log,
            stdout=log,
            env={**os.environ},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: "promoter started" in log_file.read_text(), what="the daemon to start")
        change = gitops.change("2.0.0", "Two", ["environment/dev", "environment/staging"])
        proposed = gitops.tip("environment/dev-next")
        wait_for(
            lambda: (
                main(["status", "--url", url, "--json"]) == 0
                and "Promote" in json.dumps(_status(url))
            ),
            what="a PR in the status",
        )
        assert main(["set-status", "gitops", proposed, "ci", "success", "--url", url]) == 0
        wait_for(
            lambda: (
                gitops.tip("environment/dev") != proposed
                and _active(url, "environment/dev") == change
            ),
            what="dev promoted",
        )
        assert main(["status", "--url", url]) == 0
        hold = ["hold", "guestbook", "staging", "--reason", "release freeze", "--url", url]
        assert main(hold) == 0
        assert main(["hold", "guestbook", "nope", "--reason", "x", "--url", url]) == 1
        assert main(["release", "guestbook", "staging", "--url", url]) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        finally:
            processes.end(proc)
    assert code == 0  # a clean shutdown on SIGTERM is a success
    lines = [json.loads(line) for line in log_file.read_text().splitlines() if line.startswith("{")]
    messages = [line["msg"] for line in lines]
    assert "pull request merged" in messages
    assert not any("color_message" in line for line in lines)  # uvicorn's ANSI copy
    stopped = next(line for line in lines if line["msg"] == "promoter stopped")
    assert stopped["clean"] is True
    merged = next(line for line in lines if line["msg"] == "pull request merged")
    assert merged["strategy"] == "guestbook" and merged["environment"] == "environment/dev"


def _status(url: str) -> object:
    from promoter.cli.client import ApiClient

    client = ApiClient(url)
    try:
        return client.strategies()
    finally:
        client.close()


def _active(url: str, branch: str) -> str | None:
    from promoter.cli.client import ApiClient

    client = ApiClient(url)
    try:
        envs = client.strategy("guestbook")["environments"]
    finally:
        client.close()
    env = next(e for e in envs if e["branch"] == branch)
    return (env.get("active") or {}).get("drySha")


def test_status_from_a_config_reads_without_acting(tmp_path: Path, capsys: object) -> None:
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev", "environment/staging"])
    config = write_config(tmp_path, gitops, free_port())
    gitops.change("2.0.0", "Two", ["environment/dev", "environment/staging"])
    before = gitops.tip("environment/dev")
    assert main(["status", "--config", str(config)]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "environment/staging" in out and "waiting for ci" in out
    assert gitops.tip("environment/dev") == before
    time.sleep(0)


def test_hydrate_from_the_command_line_writes_the_next_branches(
    tmp_path: Path, capsys: object
) -> None:
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev"])
    old = gitops.tip("environment/dev-next")
    from promoter.cli.sandbox import commit_files

    commit_files(gitops.path, "main", {"x.yaml": "x\n"}, "x")
    assert main(["hydrate", "--repo", str(gitops.path), "--branch", "environment/dev"]) == 0
    assert gitops.tip("environment/dev-next") != old
    assert "new commit" in capsys.readouterr().out  # type: ignore[attr-defined]
