"""Where the strategy page's buttons meet other features, on a real daemon: a freeze over
a PR ready to merge takes Merge away and offers Unfreeze in place of Freeze; lifting it
offers Merge again; a hold offers Release in place of Hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.e2e.test_local_promotion import set_status
from tests.support import GitOpsRepo, local_config, wait_for

DEV = "environment/dev"
OPS = "/api/v1/strategies/guestbook/"


def dev(client: TestClient) -> dict[str, Any]:
    found: dict[str, Any] = client.get(OPS.rstrip("/")).json()["environments"][0]
    return found


def dev_buttons(client: TestClient) -> set[str]:
    html = client.get("/dashboard/guestbook", headers={"accept": "text/html"}).text
    ops = re.findall(rf'data-(?:op|freeze)="(\w+)" data-env="{DEV}"', html)
    return set(ops)


def test_a_freeze_takes_merge_away_from_a_ready_pr_and_unfreezing_gives_it_back(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state", environments={"dev": "autoMerge: false"})
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        wait_for(lambda: dev(client).get("state") == "up-to-date", what="dev up to date")
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        proposed = wait_for(lambda: dev(client).get("pullRequest") and dev(client), what="a PR")
        set_status(client, proposed["proposed"]["hydratedSha"], "ci")
        wait_for(lambda: dev(client)["state"] == "ready", what="dev ready for a person")
        assert {"merge", "hold", "freeze"} <= dev_buttons(client)
        assert "unfreeze" not in dev_buttons(client)

        body = {"strategy": "guestbook", "environment": DEV, "reason": "release week"}
        assert client.post("/api/v1/freeze", json=body).status_code == 200
        wait_for(lambda: dev(client)["state"] != "ready", what="the freeze in the view")
        frozen = dev_buttons(client)
        assert "merge" not in frozen and "unfreeze" in frozen and "freeze" not in frozen

        lifted = {"strategy": "guestbook", "environment": DEV}
        assert client.post("/api/v1/unfreeze", json=lifted).status_code == 200
        wait_for(lambda: dev(client)["state"] == "ready", what="dev ready again")
        again = dev_buttons(client)
        assert "merge" in again and "freeze" in again and "unfreeze" not in again

        hold = {"environment": DEV, "reason": "not this one"}
        assert client.post(OPS + "hold", json=hold).status_code == 200
        wait_for(lambda: dev(client).get("holds"), what="the hold in the view")
        held = dev_buttons(client)
        assert "release" in held and "hold" not in held and "merge" not in held
