"""The bound on the promoter's own status writes, as the executor keeps it (a real
repository, the local SCM): past the writes one commit may take in a minute, a write waits,
with a warning naming the commit and the check, a count, and a reconcile asked for once the
window frees; the SCM is never called for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.engine import SetCommitStatus
from promoter.metrics import sample
from promoter.models import CommitStatus, Phase
from promoter.state.write_bound import PER_COMMIT
from tests.daemon.acting.executor_setting import Setting, log_lines, opened
from tests.support_logs import daemon_logs


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path) as s:
        yield s


def test_writes_past_the_bound_on_one_commit_wait_are_told_and_counted(setting: Setting) -> None:
    snapshot = setting.snapshot()
    flips = [
        SetCommitStatus(
            environment=0,
            sha=setting.head,
            status=CommitStatus(
                key="promoter/gates",
                phase=Phase.PENDING if n % 2 else Phase.SUCCESS,
                description=f"write {n}",
            ),
        )
        for n in range(PER_COMMIT + 3)
    ]
    writes = {"provider": "local", "operation": "set_commit_status", "outcome": "success"}
    sent = sample("promoter_scm_calls_total", writes)
    before = sample("promoter_status_writes_capped_total", {"repository": "gitops"})
    with daemon_logs("info") as logs:
        outcome = setting.run(snapshot, flips)
    assert sample("promoter_scm_calls_total", writes) - sent == PER_COMMIT
    assert len(outcome.written) == PER_COMMIT
    after = sample("promoter_status_writes_capped_total", {"repository": "gitops"})
    assert after - before == 3
    [first, *_] = log_lines(logs.getvalue(), "status writes capped")
    assert first["level"] == "warning"
    assert (first["sha"], first["key"], first["environment"]) == (
        setting.head,
        "promoter/gates",
        "environment/dev",
    )
    assert outcome.requeue_after is not None and 0 < outcome.requeue_after <= 60
