"""What the health ledger holds for one environment: healthy commits, holds, reverts.

Pure values, read by the engine and stored by ``promoter.state.ledger`` as a JSON note
under ``refs/notes/promoter.ledger``, so any instance rebuilds the same history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

MAX_HISTORY = 20
"""Healthy records and reverts kept per environment (newest last)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class HealthyRecord(Frozen):
    """The environment ran ``dry_sha`` (as ``hydrated_sha``) with every active gate green."""

    dry_sha: str
    hydrated_sha: str
    healthy_since: datetime


class Hold(Frozen):
    """A dry SHA that must not be promoted into this environment."""

    dry_sha: str
    reason: str
    since: datetime
    source: Literal["revert", "manual"]


class Revert(Frozen):
    """A revert of this environment from a bad dry SHA back to a healthy one."""

    bad_dry_sha: str
    bad_hydrated_sha: str
    restored_dry_sha: str
    restored_hydrated_sha: str
    reason: str
    trigger: Literal["auto", "manual"]
    opened_at: datetime
    branch: str
    revert_sha: str
    pr: int
    auto_merge: bool = False


class Override(Frozen):
    """A break-glass promotion: merged past the gates by a person."""

    dry_sha: str
    reason: str
    at: datetime


class Pin(Frozen):
    """A person keeps the environment on ``dry_sha``: nothing newer is promoted there."""

    dry_sha: str
    reason: str
    since: datetime


class Announcement(Frozen):
    """A change was announced as coming to this environment (a tier's notice period)."""

    dry_sha: str
    at: datetime


class Deployment(Frozen):
    """A promotion reported to the SCM as a deployment to the environment."""

    id: str
    hydrated_sha: str
    dry_sha: str
    state: Literal["in_progress", "success", "failure", "inactive"]
    at: datetime
    pr: int | None = None
    link: str = ""
    """Where its statuses link to: the promotion PR (or the strategy's status page)."""


class QueueAttempt(Frozen):
    """The promoter enqueued PR ``number`` at head ``head_sha``; the queue may have taken it
    out again (``dequeued_at``, with the queue's reason), a failed attempt; or the promoter
    took it out itself (``withdrawn``: a freeze, a hold, a pin, a newer head, a gate that no
    longer passes), to enqueue it again once every gate passes. ``merged_at``: seen merged."""

    number: int
    head_sha: str
    attempts: int
    enqueued_at: datetime
    dequeued_at: datetime | None = None
    reason: str = ""
    dry_sha: str = ""
    """The dry commit the PR promotes: the queue's merge runs it (its deployment's PR)."""
    url: str = ""
    """The PR's page, where that deployment links to."""
    withdrawn: bool = False
    merged_at: datetime | None = None

    @property
    def waiting(self) -> bool:
        """In the queue as far as the promoter knows: neither taken out nor merged."""
        return self.dequeued_at is None and self.merged_at is None


class QueueRace(Frozen):
    """PR ``number`` (``dry_sha``) was merged from the merge queue before the promoter could
    take it out: it merged while ``reason`` (frozen, held, pinned elsewhere, ...)."""

    number: int
    dry_sha: str
    reason: str
    at: datetime


class Freeze(Frozen):
    """A person stopped the line here (``promoter freeze``): no promotion until lifted."""

    reason: str
    by: str
    since: datetime


class FreezeEvent(Frozen):
    """A freeze set or lifted, and by whom: the freezes' audit trail, kept in git."""

    action: Literal["freeze", "unfreeze"]
    reason: str
    by: str
    at: datetime


class EnvLedger(Frozen):
    """One environment's ledger; every field is history the promoter wrote to git."""

    healthy: tuple[HealthyRecord, ...] = ()
    holds: tuple[Hold, ...] = ()
    reverts: tuple[Revert, ...] = ()
    overrides: tuple[Override, ...] = ()
    paused: str | None = None
    released_at: datetime | None = None
    """When a person last released this environment: failures reported before it were
    seen and do not pause or revert it again."""
    pin: Pin | None = None
    approved_changes: tuple[str, ...] = ()
    """Blocked dry commits a person let through (``promoter approve-change``)."""
    announcements: tuple[Announcement, ...] = ()
    queue: QueueAttempt | None = None
    """The latest merge-queue attempt of this environment's promotion PR."""
    queue_races: tuple[QueueRace, ...] = ()
    """Promotions the merge queue merged while they should not have merged, newest last."""
    deployments: tuple[Deployment, ...] = ()
    """The SCM deployments of this environment, newest last."""
    reviewers_requested: tuple[int, ...] = ()
    """Promotion PRs whose reviewers were requested (never twice)."""
    freeze: Freeze | None = None
    """A freeze in force on this key (an environment, a strategy's ``*`` or ``*`` ``*``)."""
    freeze_log: tuple[FreezeEvent, ...] = ()

    @property
    def last_healthy(self) -> HealthyRecord | None:
        return self.healthy[-1] if self.healthy else None

    def with_healthy(self, record: HealthyRecord) -> EnvLedger:
        return self.model_copy(update={"healthy": (*self.healthy, record)[-MAX_HISTORY:]})

    def with_hold(self, hold: Hold) -> EnvLedger:
        if any(h.dry_sha == hold.dry_sha for h in self.holds):
            return self
        return self.model_copy(update={"holds": (*self.holds, hold)})

    def without_holds(self, dry_sha: str | None = None) -> EnvLedger:
        kept = tuple(h for h in self.holds if dry_sha is not None and h.dry_sha != dry_sha)
        return self.model_copy(update={"holds": kept})

    def with_revert(self, revert: Revert) -> EnvLedger:
        return self.model_copy(update={"reverts": (*self.reverts, revert)[-MAX_HISTORY:]})

    def with_override(self, override: Override) -> EnvLedger:
        return self.model_copy(update={"overrides": (*self.overrides, override)[-MAX_HISTORY:]})

    def with_approved_change(self, dry_sha: str) -> EnvLedger:
        if dry_sha in self.approved_changes:
            return self
        approved = (*self.approved_changes, dry_sha)[-MAX_HISTORY:]
        return self.model_copy(update={"approved_changes": approved})

    def with_announcement(self, announcement: Announcement) -> EnvLedger:
        if any(a.dry_sha == announcement.dry_sha for a in self.announcements):
            return self
        kept = (*self.announcements, announcement)[-MAX_HISTORY:]
        return self.model_copy(update={"announcements": kept})

    def announced(self, dry_sha: str) -> Announcement | None:
        return next((a for a in self.announcements if a.dry_sha == dry_sha), None)

    def frozen(self, freeze: Freeze) -> EnvLedger:
        """Frozen by ``freeze`` (a freeze already in force keeps its start), logged."""
        event = FreezeEvent(action="freeze", reason=freeze.reason, by=freeze.by, at=freeze.since)
        kept = self.freeze or freeze
        log = (*self.freeze_log, event)[-MAX_HISTORY:]
        return self.model_copy(update={"freeze": kept, "freeze_log": log})

    def unfrozen(self, *, by: str, at: datetime) -> EnvLedger:
        """The freeze lifted, logged; unchanged when none is in force."""
        if self.freeze is None:
            return self
        event = FreezeEvent(action="unfreeze", reason=self.freeze.reason, by=by, at=at)
        log = (*self.freeze_log, event)[-MAX_HISTORY:]
        return self.model_copy(update={"freeze": None, "freeze_log": log})

    def with_queue_race(self, race: QueueRace) -> EnvLedger:
        if any(r.number == race.number and r.dry_sha == race.dry_sha for r in self.queue_races):
            return self
        return self.model_copy(update={"queue_races": (*self.queue_races, race)[-MAX_HISTORY:]})

    def with_reviewers_requested(self, number: int) -> EnvLedger:
        if number in self.reviewers_requested:
            return self
        done = (*self.reviewers_requested, number)[-MAX_HISTORY:]
        return self.model_copy(update={"reviewers_requested": done})

    def with_deployment(self, deployment: Deployment) -> EnvLedger:
        """``deployment`` recorded: in the place of the record of the same id, else last."""
        if any(d.id == deployment.id for d in self.deployments):
            found = tuple(deployment if d.id == deployment.id else d for d in self.deployments)
            return self.model_copy(update={"deployments": found})
        found = (*self.deployments, deployment)[-MAX_HISTORY:]
        return self.model_copy(update={"deployments": found})
