"""What a notification says: one event of a strategy's environment, named for people."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from promoter.daemon.events import ActionEvent

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
    sha: str = ""
    pr: int | None = None
    url: str = ""
    time: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def data(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "strategy": self.strategy,
            "environment": self.environment,
            "message": self.message,
            "drySha": self.sha or None,
            "pullRequest": self.pr,
            "url": self.url or None,
        }


def from_action(event: ActionEvent, *, public_url: str) -> Notification | None:
    """The notification for ``event``, or None when it is not one people are told of."""
    name = KINDS.get(event.kind)
    if name is None:
        return None
    return Notification(
        event=name,
        strategy=event.strategy,
        environment=event.environment,
        message=event.message,
        sha=event.sha,
        pr=event.pr,
        url=f"{public_url.rstrip('/')}/dashboard/{event.strategy}",
    )
