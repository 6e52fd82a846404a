"""set-status never succeeds silently: a status no environment reads is refused, naming the
commits where it would count (the hydrated commit an environment runs, a PR's head)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

DEV = ENVIRONMENTS[0]
URL = "/api/v1/repositories/gitops/commits/{}/statuses"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(Daemon(local_config(gitops.path, tmp_path / "state")).app) as client:
        wait_for(lambda: dev(client)["state"] == "up-to-date", what="a first reconcile")
        yield client


def dev(client: TestClient) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == DEV)


def post(client: TestClient, sha: str, key: str, **extra: Any) -> Any:
    return client.post(URL.format(sha), json={"key": key, "phase": "success", **extra})


def test_health_on_the_dry_commit_is_refused_naming_the_hydrated_commit_it_counts_on(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    running = gitops.tip(DEV)
    dry = dev(client)["active"]["drySha"]
    answer = post(client, dry, "health")
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error.startswith(
        f"health on {dry[:7]} would count for no environment: {dry[:7]} is the dry commit"
        f" {DEV} runs"
    )
    assert f"report health on {running[:7]}, the commit {DEV} runs" in error
    assert post(client, running, "health").status_code == 201


def test_a_key_no_strategy_reads_is_refused(client: TestClient, gitops: GitOpsRepo) -> None:
    answer = post(client, gitops.tip(DEV), "smoke")
    assert answer.status_code == 409
    assert answer.json()["error"].endswith("no strategy of gitops reads smoke")


def test_ci_on_the_running_commit_names_the_head_of_the_promotion(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    head = wait_for(lambda: (e := dev(client))["pullRequest"] and e)["proposed"]["hydratedSha"]
    answer = post(client, gitops.tip(DEV), "ci")
    assert answer.status_code == 409
    assert (
        f"report ci on {head[:7]}, the head of {DEV}-next, the promotion into {DEV}"
        in (answer.json()["error"])
    )


def test_a_head_pushed_a_moment_ago_counts_before_the_promoter_has_seen_it(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state", pollInterval="1h")  # no fetch
    with TestClient(Daemon(config).app) as client:
        wait_for(lambda: dev(client)["state"] == "up-to-date", what="a first reconcile")
        gitops.change("1.2.0", "Bump guestbook to 1.2.0")  # nothing has fetched it
        assert post(client, gitops.tip(f"{DEV}-next"), "ci").status_code == 201


def test_force_writes_a_status_nobody_reads(client: TestClient, gitops: GitOpsRepo) -> None:
    answer = post(client, gitops.tip("main"), "health", force=True)
    assert answer.status_code == 201, answer.text
