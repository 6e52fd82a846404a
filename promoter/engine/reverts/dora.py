"""DORA metrics of one environment, computed from its ledger and the dry history (pure).

- **deployments**: dry commits that ran healthy in the environment (first healthy record
  of each dry SHA) plus the bad ones reverted out of it, within the window;
- **lead time**: dry commit time → first healthy in the environment, per deployed commit;
- **change failure rate**: reverted dry commits / deployed dry commits;
- **time to restore**: a revert opened (the failure seen) → the next healthy record.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from statistics import median

from pydantic import BaseModel, ConfigDict

from promoter.engine.core.ledger_state import EnvLedger

WINDOW = timedelta(days=30)


class DoraFigures(BaseModel):
    """One environment's figures over ``window_days`` ending at ``until``."""

    model_config = ConfigDict(frozen=True)

    environment: str
    window_days: float
    until: datetime
    deployments: int
    deployment_frequency_per_day: float
    lead_times_seconds: tuple[float, ...]
    lead_time_median_seconds: float | None
    failures: int
    change_failure_rate: float | None
    restore_times_seconds: tuple[float, ...]
    time_to_restore_median_seconds: float | None
    daily_deployments: tuple[int, ...]
    """Deployments per day, oldest first: what the dashboard's small chart draws."""


def _first_healthy(ledger: EnvLedger) -> dict[str, datetime]:
    first: dict[str, datetime] = {}
    for record in ledger.healthy:
        seen = first.get(record.dry_sha)
        if seen is None or record.healthy_since < seen:
            first[record.dry_sha] = record.healthy_since
    return first


def dora(
    environment: str,
    ledger: EnvLedger,
    *,
    commit_times: Mapping[str, datetime],
    now: datetime,
    window: timedelta = WINDOW,
) -> DoraFigures:
    """The figures for ``environment`` from ``ledger``; ``commit_times`` by dry SHA."""
    start = now - window
    healthy = {sha: at for sha, at in _first_healthy(ledger).items() if start <= at <= now}
    reverts = [r for r in ledger.reverts if start <= r.opened_at <= now]
    deployed_at = dict(healthy)
    for revert in reverts:
        deployed_at.setdefault(revert.bad_dry_sha, revert.opened_at)
    lead_times = tuple(
        (at - commit_times[sha]).total_seconds()
        for sha, at in sorted(healthy.items(), key=lambda item: item[1])
        if sha in commit_times and commit_times[sha] <= at
    )
    restores: list[float] = []
    for revert in reverts:
        after = [h.healthy_since for h in ledger.healthy if h.healthy_since >= revert.opened_at]
        if after:
            restores.append((min(after) - revert.opened_at).total_seconds())
    failed = {r.bad_dry_sha for r in reverts}
    days = max(1, round(window.total_seconds() / 86400))
    daily = [0] * days
    for at in deployed_at.values():
        index = min(days - 1, int((at - start).total_seconds() // 86400))
        daily[index] += 1
    count = len(deployed_at)
    return DoraFigures(
        environment=environment,
        window_days=window.total_seconds() / 86400,
        until=now,
        deployments=count,
        deployment_frequency_per_day=count / (window.total_seconds() / 86400),
        lead_times_seconds=lead_times,
        lead_time_median_seconds=median(lead_times) if lead_times else None,
        failures=len(failed),
        change_failure_rate=len(failed) / count if count else None,
        restore_times_seconds=tuple(restores),
        time_to_restore_median_seconds=median(restores) if restores else None,
        daily_deployments=tuple(daily),
    )
