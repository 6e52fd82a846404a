"""The view the API serves shows the statuses the promoter has just written."""

from __future__ import annotations

from pathlib import Path

from promoter.engine import GATES_KEY
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

PROD = ENVIRONMENTS[2]


def test_the_view_shows_the_status_the_promoter_has_just_written(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(
        gitops.path, tmp_path / "state", environments={"prod": "autoMerge: false"}
    )
    runtime = Daemon(config).runtime
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.snapshot is not None
    prod = next(e for e in view.snapshot.environments if e.branch == PROD)
    assert prod.proposed is not None
    written = prod.proposed.status(GATES_KEY)  # a person merges prod: its summary, at once
    assert written is not None and written.phase.value == "pending"
