"""The view the API serves shows the statuses the promoter has just written."""

from __future__ import annotations

from pathlib import Path

from promoter.engine import PREVIOUS_ENVIRONMENT_KEY
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

STAGING = ENVIRONMENTS[1]


def test_the_view_shows_the_status_the_promoter_has_just_written(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.snapshot is not None
    staging = next(e for e in view.snapshot.environments if e.branch == STAGING)
    assert staging.proposed is not None
    written = staging.proposed.status(PREVIOUS_ENVIRONMENT_KEY)
    assert written is not None and written.phase.value == "pending"
