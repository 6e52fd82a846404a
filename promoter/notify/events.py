"""What a notification says: one event of a strategy's environment, named for people."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from promoter.daemon import ActionEvent

KINDS = {
    "opened": "promotion.opened",
    "merged": "promotion.merged",
    "revert": "revert.opened",
    "reverted": "revert.merged",
    "held": "hold",
    "released": "release",
    "paused": "pause",
    "pinned": "pin",
    "unpinned": "unpin",
    "announced": "upcoming",
}
"""The executor's event kinds that are notifications, and their names."""


@dataclass(frozen=True)
class Notification:
    event: str
    strategy: str
    environment: str
    message: str
    dry_sha: str = ""
    hydrated_sha: str = ""
    pr: int | None = None
    pr_url: str = ""
    url: str = ""
    """The strategy's page on the dashboard."""
    time: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def data(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "strategy": self.strategy,
            "environment": self.environment,
            "message": self.message,
            "drySha": self.dry_sha or None,
            "hydratedSha": self.hydrated_sha or None,
            "pullRequest": self.pr,
            "pullRequestUrl": self.pr_url or None,
            "url": self.url or None,
        }


def dashboard_url(public_url: str, strategy: str) -> str:
    return f"{public_url.rstrip('/')}/dashboard/{strategy}"


def from_action(event: ActionEvent, *, public_url: str) -> list[Notification]:
    """The notifications of ``event`` (none when people are not told of it): a revert
    opened also announces the holds it set (the bad commit kept out of that environment
    and every later one)."""
    name = KINDS.get(event.kind)
    if name is None:
        return []
    common: dict[str, Any] = {
        "strategy": event.strategy,
        "environment": event.environment,
        "dry_sha": event.dry_sha,
        "hydrated_sha": event.hydrated_sha,
        "pr": event.pr,
        "pr_url": event.link if event.link.startswith(("https://", "http://")) else "",
        "url": dashboard_url(public_url, event.strategy),
    }
    found = [Notification(event=name, message=event.message, **common)]
    if event.kind == "revert":
        held = f"held by the revert out of {event.environment} and later: {event.message}"
        found.append(Notification(event="hold", message=held, **common))
    return found
