"""Events a plugin pushes (``promoter.scm/v1.1``): a ref moved, a status changed, a PR changed.

After ``events/subscribe`` names the repositories the promoter serves through the
plugin, the plugin may write JSON-RPC notifications (no ``id``) on its stdout, at any
time and between answers. Each is validated here and handed to the ``EventSink`` of the
subscription, which treats it like a webhook delivery: it wakes the strategies that
track what moved. Events are hints, as webhooks are: the reconcile they cause reads
everything fresh, and one that is lost is healed by the periodic resync. An event about
a repository that was not subscribed, or that does not validate, is dropped and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, ValidationError

from promoter.config import Repository
from promoter.metrics import PLUGIN_EVENTS_TOTAL
from promoter.models import CommitStatus, PullRequest
from scm_plugins.external.messages import Message

log = logging.getLogger("promoter.plugins")


class RefMoved(Message):
    repository: str = Field(description="The repository's name, as events/subscribe gave it.")
    ref: str = Field(description="The full ref name: refs/heads/... or refs/notes/...")
    before: str | None = Field(default=None, description="The old SHA; null: a new ref.")
    after: str | None = Field(default=None, description="The new SHA; null: a deleted ref.")


class StatusChanged(Message):
    repository: str
    sha: str
    status: CommitStatus


class PullRequestChanged(Message):
    repository: str
    pull_request: PullRequest = Field(description="The pull request as it is now.")


EVENTS: dict[str, type[Message]] = {
    "events/refMoved": RefMoved,
    "events/statusChanged": StatusChanged,
    "events/pullRequestChanged": PullRequestChanged,
}
"""notification method -> its parameters."""


class EventSink(Protocol):
    """Where a plugin's events go (the daemon's: ``webhooks.PluginEvents``)."""

    def ref_moved(
        self, *, repository: str, ref: str, before: str | None, after: str | None
    ) -> None: ...

    def status_changed(self, *, repository: str, sha: str, status: CommitStatus) -> None: ...

    def pull_request_changed(self, *, repository: str, pull_request: PullRequest) -> None: ...


@runtime_checkable
class EventSource(Protocol):
    """A plugin that may push events: ``subscribe`` says whether this one does."""

    def subscribe(self, repositories: Iterable[Repository], sink: EventSink) -> bool: ...


@dataclass
class Subscription:
    """The repositories a provider's plugin reports events for, and where they go."""

    provider: str
    repositories: tuple[Repository, ...]
    sink: EventSink

    def deliver(self, method: str, params: Any) -> None:
        """Validate one notification and hand it to the sink; never raises."""
        model = EVENTS.get(method)
        kind = method.removeprefix("events/") if model is not None else "unknown"
        try:
            if model is None:
                raise ValueError(f"no event {method}")
            event = model.model_validate(params)
        except (ValidationError, ValueError) as exc:
            self._count(kind, "invalid")
            log.warning(
                "plugin event refused",
                extra={"provider": self.provider, "event": method[:100], "error": str(exc)[:300]},
            )
            return
        repository = getattr(event, "repository", "")
        if repository not in {r.name for r in self.repositories}:
            self._count(kind, "ignored")
            log.info(
                "plugin event about a repository it does not serve, ignored",
                extra={"provider": self.provider, "event": method, "repository": repository},
            )
            return
        try:
            self._apply(event)
        except Exception:
            self._count(kind, "error")
            log.exception("plugin event failed", extra={"provider": self.provider, "event": kind})
            return
        self._count(kind, "accepted")

    def _apply(self, event: Message) -> None:
        if isinstance(event, RefMoved):
            self.sink.ref_moved(
                repository=event.repository, ref=event.ref, before=event.before, after=event.after
            )
        elif isinstance(event, StatusChanged):
            self.sink.status_changed(
                repository=event.repository, sha=event.sha, status=event.status
            )
        elif isinstance(event, PullRequestChanged):
            self.sink.pull_request_changed(
                repository=event.repository, pull_request=event.pull_request
            )

    def _count(self, kind: str, result: str) -> None:
        PLUGIN_EVENTS_TOTAL.labels(self.provider, kind, result).inc()
