"""A merge the pre-merge re-read defers (a required gate no longer success on the SCM)
shows in the API as the environment's reason, not only in a log line."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from promoter.models import CommitStatus, Phase
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV = ENVIRONMENTS[0]


def test_a_merge_deferred_because_ci_went_pending_on_the_scm_shows_why_in_the_api(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    runtime = daemon.runtime
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")  # opens dev's PR
    head = gitops.tip(f"{DEV}-next")
    runtime.post_status("gitops", head, CommitStatus(key="ci", phase=Phase.SUCCESS))
    # CI runs again on the SCM, and its webhook has not reached the promoter yet.
    repo = runtime.config.repository("gitops")
    rerun = CommitStatus(key="ci", phase=Phase.PENDING)
    runtime.plugins["local"].set_commit_status(repo=repo, sha=head, status=rerun)
    dev_before = gitops.tip(DEV)
    runtime.reconciler.reconcile("guestbook")  # decides the merge on what it read: success

    client = TestClient(daemon.app)  # no lifespan: no worker reconciles meanwhile
    answer = client.get("/api/v1/strategies/guestbook")
    assert answer.status_code == 200, answer.text
    dev = next(e for e in answer.json()["environments"] if e["branch"] == DEV)
    assert (dev["state"], dev["reason"]) == (
        "blocked",
        f"merge deferred: ci is pending on {head[:7]}",
    )
    assert gitops.tip(DEV) == dev_before
    assert dev["pullRequest"]["state"] == "open"
