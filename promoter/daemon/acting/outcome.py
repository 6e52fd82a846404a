"""What one run of the executor did: merges, deferrals, statuses written, failures.

The reconciler reads it to build the view and to know when to run the strategy again;
the workers read it when a run raised, to show the failure in its environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promoter.engine import EnvLedger, SetCommitStatus


@dataclass
class Outcome:
    """What one run of the executor did, for the reconciler and the view."""

    requeue_after: float | None = None
    merged: list[str] = field(default_factory=list)
    merge_shas: dict[str, str] = field(default_factory=dict)
    """The commit each environment's merge made, by environment branch."""
    deferred: dict[str, str] = field(default_factory=dict)
    """Environments whose merge waits for a gate the SCM no longer reports success, and why."""
    written: list[SetCommitStatus] = field(default_factory=list)
    """Statuses written: the view served shows them at once, not after the next read."""
    recorded: dict[str, EnvLedger] = field(default_factory=dict)
    """Environments recorded healthy, with their ledger as written: the view shows the
    record at once; the reconciler runs the strategy again only if something may wait
    on it."""
    failed_environment: str | None = None
    """The environment whose action failed (the run raised), for the view to show it there."""

    def requeue(self, seconds: float) -> None:
        self.requeue_after = (
            seconds if self.requeue_after is None else min(self.requeue_after, seconds)
        )
