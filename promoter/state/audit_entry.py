"""An audit entry (one write someone asked for, and what came of it), and a query of them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from promoter.config import short_name

Outcome = Literal["started", "allowed", "refused", "failed", "interrupted"]


class AuditEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    who: str
    via: str
    action: str
    strategy: str | None = None
    environment: str | None = None
    repository: str | None = None
    detail: dict[str, str] = Field(default_factory=dict)
    address: str = ""
    """The peer that opened the connection."""
    forwarded: str | None = None
    """The client a trusted proxy forwarded the request for (its ``addressHeader``)."""
    origin: str | None = None
    outcome: Outcome
    status: int | None = None
    message: str = ""


class AuditQuery(BaseModel):
    """A page of the audit, newest first; ``before`` is the ``next`` of the page before."""

    model_config = ConfigDict(frozen=True)

    strategy: str | None = None
    environment: str | None = None
    who: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before: str | None = None
    limit: int = 50

    def matches(self, e: AuditEntry) -> bool:
        env = self.environment
        return (
            (self.strategy is None or e.strategy == self.strategy)
            and (env is None or e.environment in (env, *_branches_named(env, e.environment)))
            and (self.who is None or e.who == self.who)
            and (self.action is None or e.action == self.action)
            and (self.outcome is None or e.outcome == self.outcome)
            and (self.since is None or e.at >= self.since)
            and (self.until is None or e.at <= self.until)
            and (self.before is None or cursor(e) < self.before)
        )


def _branches_named(short: str, branch: str | None) -> tuple[str, ...]:
    """``branch`` when ``short`` is its last part (``dev`` names ``environment/dev``)."""
    return (branch,) if branch and short_name(branch) == short else ()


def cursor(e: AuditEntry) -> str:
    """Entries in time order (then by id), as a string that sorts the same way."""
    return f"{e.at.astimezone(UTC):%Y-%m-%dT%H:%M:%S.%fZ}|{e.id}"


class AuditPage(BaseModel):
    entries: list[AuditEntry]
    next: str | None
    """The ``before`` of the next page, or None when this one is the last."""
