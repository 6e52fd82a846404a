"""End to end on the embedded default: the daemon, the local SCM and real git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.daemon import Runtime
from promoter.metrics import sample
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == branch)


def set_status(
    client: TestClient, sha: str, key: str, phase: str = "success", *, force: bool = False
) -> None:
    body = {"key": key, "phase": phase, **({"force": True} if force else {})}
    response = client.post(f"/api/v1/repositories/gitops/commits/{sha}/statuses", json=body)
    assert response.status_code == 201, response.text


def active_dry(client: TestClient, branch: str) -> str | None:
    return (env_view(client, branch).get("active") or {}).get("drySha")


def wait_state(client: TestClient, branch: str, state: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        env = env_view(client, branch)
        return env if env.get("state") == state else None

    return wait_for(check, what=f"{branch} to be {state}")


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Any:
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    runtime = daemon.runtime
    with TestClient(daemon.app) as client:
        client.runtime = runtime  # type: ignore[attr-defined]
        wait_state(client, "environment/prod", "up-to-date")
        for branch in ENVIRONMENTS:
            set_status(client, gitops.tip(branch), "health")
        yield client


def promote_through(client: TestClient, gitops: GitOpsRepo, change: str) -> None:
    for branch in ENVIRONMENTS:
        env = wait_for(
            lambda b=branch: (e := env_view(client, b))["pullRequest"] and e,
            what=f"a PR for {branch}",
        )
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        wait_for(lambda b=branch: active_dry(client, b) == change, what=f"{branch} at the change")
        set_status(client, gitops.tip(branch), "health")


def test_a_change_moves_dev_to_staging_to_prod_as_gates_turn_green(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    promote_through(client, gitops, change)
    runtime: Runtime = client.runtime  # type: ignore[attr-defined]
    prs = runtime.plugins["local"].pull_requests(repo=runtime.config.repository("gitops"))  # type: ignore[attr-defined]
    assert sorted((pr.base_branch, pr.state.value) for pr in prs) == sorted(
        (b, "merged") for b in ENVIRONMENTS
    )
    for branch in ENVIRONMENTS:
        merge_parents = git(gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert merge_parents[1] == gitops.tip(f"{branch}-next")
        assert active_dry(client, branch) == change
    wait_state(client, "environment/prod", "up-to-date")


def test_a_failing_proposed_gate_blocks_the_environment_and_says_why(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    before = active_dry(client, "environment/dev")
    gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    env = wait_for(
        lambda: (e := env_view(client, "environment/dev"))["pullRequest"] and e, what="a dev PR"
    )
    set_status(client, env["proposed"]["hydratedSha"], "ci", "failure")
    blocked = wait_state(client, "environment/dev", "blocked")
    assert "ci" in blocked["reason"]
    assert active_dry(client, "environment/dev") == before
    staging = env_view(client, "environment/staging")
    assert staging["state"] == "blocked"
    assert "environment/dev" in staging["reason"]


def test_a_second_reconcile_on_unchanged_state_changes_nothing(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    wait_for(lambda: env_view(client, "environment/prod")["pullRequest"], what="PRs opened")
    runtime: Runtime = client.runtime  # type: ignore[attr-defined]
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    writes = (
        "open_pull_request",
        "update_pull_request",
        "merge_pull_request",
        "close_pull_request",
        "set_commit_status",
    )

    def written() -> float:
        return sum(
            sample(
                "promoter_scm_calls_total",
                {"provider": "local", "operation": op, "outcome": "success"},
            )
            for op in writes
        )

    runtime.reconciler.reconcile("guestbook")
    first = written()
    runtime.reconciler.reconcile("guestbook")
    assert written() == first


def test_a_status_of_a_tracked_commit_wakes_its_strategy_without_asking_the_remote(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "quiet", pollInterval="1h")
    daemon = Daemon(config)
    runtime = daemon.runtime
    with TestClient(daemon.app) as client:
        wait_state(client, "environment/prod", "up-to-date")
        runtime.mirrors.max_age = 3600.0  # only an invalidation refreshes the mirror now

        def after_status(sha: str, key: str, *, force: bool = False) -> float:
            before = sample("promoter_git_ls_remote_total", {"repository": "gitops"})
            reconciled = client.get("/api/v1/strategies/guestbook").json()["reconciledAt"]
            set_status(client, sha, key, force=force)
            wait_for(
                lambda: (
                    client.get("/api/v1/strategies/guestbook").json()["reconciledAt"] != reconciled
                    and runtime.queue.idle()
                ),
                what="the reconcile the status woke",
            )
            return sample("promoter_git_ls_remote_total", {"repository": "gitops"}) - before

        assert after_status(gitops.tip("environment/dev"), "health") == 0
        # A commit it never read (written anyway: no environment reads a dry commit's status).
        assert after_status(git(gitops.path, "rev-parse", "main"), "e2e", force=True) >= 1


def test_the_statuses_of_commits_no_environment_runs_or_proposes_any_more_are_let_go(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    runtime: Runtime = client.runtime  # type: ignore[attr-defined]
    cache = runtime.status_cache
    first = {branch: gitops.tip(branch) for branch in ENVIRONMENTS}
    for branch, sha in first.items():
        wait_for(lambda s=sha: ("gitops", s) in cache, what=f"the statuses of {branch}")
    for n, version in enumerate(("1.4.0", "1.5.0")):
        change = gitops.change(version, f"Bump guestbook to {version}")
        promote_through(client, gitops, change)
        wait_for(lambda: runtime.queue.idle(), what="an idle queue")
        runtime.reconciler.reconcile("guestbook")
        tracked = {
            commit["hydratedSha"]
            for env in client.get("/api/v1/strategies/guestbook").json()["environments"]
            for commit in (env.get("active"), env.get("proposed"))
            if commit
        }
        assert len(tracked) == 2 * len(ENVIRONMENTS)
        # what was each environment's commit before the change is no one's any more
        assert not [b for b, sha in first.items() if ("gitops", sha) in cache], n
        assert len(cache) <= len(tracked)
        first = {branch: gitops.tip(branch) for branch in ENVIRONMENTS}
