"""GitLab end to end: with "Pipelines must succeed", a promotion MR the promoter merges
itself cannot be merged by a person before its previous environment is healthy.

The promoter's statuses join the head's pipeline, so a pending one keeps it running and
GitLab refuses the merge; nothing pending on the head would let a person merge early.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.scm_gitlab.conftest import PROJECT
from tests.scm_gitlab.fake_gitlab_routes import merge_mr
from tests.support import wait_for

from .test_gates_seen_at_once import DEV, GitLabSide, dry, env, open_mr, start

STAGING = "environment/staging"


@pytest.fixture
def gitlab(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, GitLabSide, Any]]:
    yield from start(tmp_path, genuine_fixtures, monkeypatch, gate="pipeline")


def pending_ours(side: GitLabSide, sha: str) -> list[str]:
    latest: dict[str, str] = {}
    for status in side.fake.projects[PROJECT].statuses:
        if status["sha"] == sha:
            latest[status["name"]] = status["status"]
    return [
        name
        for name, state in latest.items()
        if name.startswith("promoter/") and state in ("pending", "running")
    ]


def test_a_person_cannot_merge_an_mr_by_hand_before_its_previous_environment_is_healthy(
    gitlab: Any,
) -> None:
    client, side, _ = gitlab
    project = side.fake.projects[PROJECT]
    project.pipelines_must_succeed = True
    change = side.gitops.change("1.4.0", "Bump guestbook to 1.4.0")
    open_mr(side, DEV)
    side.ci_job(DEV, "lint", "success")
    wait_for(lambda: dry(client, DEV) == change, what="dev to run the change")
    mr = open_mr(side, STAGING)  # dev runs it, and is not healthy yet
    head = side.gitops.tip(f"{STAGING}-next")
    side.ci_job(STAGING, "lint", "success")  # CI passed: its pipeline succeeded
    wait_for(lambda: pending_ours(side, head) or None, what="a pending check of the promoter")
    assert merge_mr(side.fake, project, mr["iid"], {})[0] == 405  # a person is refused
    assert dry(client, STAGING) != change
    side.external_status(side.gitops.tip(DEV), "health", "success")
    wait_for(lambda: dry(client, STAGING) == change, what="staging to run the change")
    assert env(client, STAGING)["state"] != "error"
    writes = [p for m, p in side.fake.requests if m == "POST" and p.endswith(f"/statuses/{head}")]
    assert len(writes) <= 4  # the promoter's checks only: each pending, then success
