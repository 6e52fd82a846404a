"""A person acts on the hydrated commit: the reason names it, set-status takes its short
SHA, and ``promoter status`` shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.cli.status_table import render
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

DEV = ENVIRONMENTS[0]


def dev(client: TestClient) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == DEV)


def test_a_status_set_on_the_short_hydrated_sha_the_reason_names_promotes_the_change(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    with TestClient(daemon.app) as client:
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        head = gitops.tip(f"{DEV}-next")
        waiting = wait_for(
            lambda: (e := dev(client)).get("pullRequest") and "waiting for ci" in e["reason"] and e,
            what="dev waiting for ci",
        )
        assert (
            f"waiting for ci: report it on {head[:7]}, the head of {DEV}-next (dry {change[:7]})"
            in waiting["reason"]
        )
        table = render([client.get("/api/v1/strategies/guestbook").json()])
        assert head[:7] in next(line for line in table.splitlines() if DEV + " " in line)

        url = "/api/v1/repositories/gitops/commits/{}/statuses"
        unknown = client.post(url.format("0000000"), json={"key": "ci", "phase": "success"})
        assert unknown.status_code == 422 and "names no single commit" in unknown.text
        answer = client.post(url.format(head[:7]), json={"key": "ci", "phase": "success"})
        assert answer.status_code == 201, answer.text
        assert answer.json()["sha"] == head
        wait_for(lambda: dev(client)["active"]["drySha"] == change, what="dev promoted")
