"""The DORA counters count deployments, failures and restores as the executor tells them."""

from __future__ import annotations

from promoter.daemon.acting.dora_counters import count
from promoter.daemon.acting.events import ActionEvent
from promoter.metrics import sample


def test_merges_reverts_and_reverts_merged_count_deployments_failures_and_restores() -> None:
    labels = {"strategy": "counted", "environment": "environment/prod"}
    names = ("deployments", "failures", "restores")
    before = {n: sample(f"promoter_dora_{n}_total", labels) for n in names}
    for kind in ("merged", "merged", "revert", "reverted", "held", "opened"):
        count(ActionEvent(kind, "counted", "environment/prod", "", "a" * 40))
    after = {n: sample(f"promoter_dora_{n}_total", labels) - before[n] for n in names}
    assert after == {"deployments": 2.0, "failures": 1.0, "restores": 1.0}
