"""The ``notifications:`` section of promoter.yaml: outbound webhooks and their filters."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.secrets import SecretRef

EVENTS = (
    "promotion.opened",
    "promotion.merged",
    "promotion.blocked",
    "gate.failed",
    "revert.opened",
    "revert.merged",
    "hold",
    "release",
    "pause",
    "pin",
    "unpin",
    "upcoming",
)
"""What a sink can subscribe to (``events: []`` means all of them)."""

EventName = Literal[
    "promotion.opened",
    "promotion.merged",
    "promotion.blocked",
    "gate.failed",
    "revert.opened",
    "revert.merged",
    "hold",
    "release",
    "pause",
    "pin",
    "unpin",
    "upcoming",
]


class Sink(Spec):
    """One outbound webhook."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    url: str | None = Field(default=None, description="Where to POST; or urlFrom.")
    url_from: SecretRef | None = Field(
        default=None, description="The URL as a secret (Slack and Teams URLs are credentials)."
    )
    format: Literal["cloudevents", "slack", "teams"] = "cloudevents"
    secret: SecretRef | None = Field(
        default=None, description="Key of the HMAC-SHA256 signature (X-Promoter-Signature-256)."
    )
    events: list[EventName] = Field(default_factory=list, description="Empty: every event.")
    strategies: list[str] = Field(default_factory=list, description="Empty: every strategy.")
    environments: list[str] = Field(default_factory=list, description="Empty: every one.")
    timeout: Duration = 10.0
    max_attempts: int = Field(default=10, ge=1, le=100)
    digest: Duration | None = Field(
        default=None,
        description="Send one message per this period listing the events, instead of one "
        "message per event (for noisy channels).",
    )

    @model_validator(mode="after")
    def _one_url(self) -> Sink:
        if (self.url is None) == (self.url_from is None):
            raise ValueError("give exactly one of url or urlFrom")
        if self.url is not None and not self.url.startswith(("https://", "http://")):
            raise ValueError("url must be http:// or https://")
        return self

    def target(self) -> str:
        """The URL (resolving ``urlFrom``); never log it."""
        if self.url_from is not None:
            return self.url_from.resolve()
        return self.url or ""

    def wants(self, event: str, strategy: str, environment: str) -> bool:
        return (
            (not self.events or event in self.events)
            and (not self.strategies or strategy in self.strategies)
            and (not self.environments or environment in self.environments)
        )


class Notifications(Spec):
    sinks: list[Sink] = Field(default_factory=list)
    blocked_after: Duration = Field(
        default=3600.0,
        description="An environment held up this long after the one before it was ready "
        "sends promotion.blocked.",
    )
    queue_size: int = Field(default=1000, ge=1, description="Deliveries kept; oldest dropped.")
    max_backoff: Duration = Field(default=300.0, description="Cap of the retry backoff.")
