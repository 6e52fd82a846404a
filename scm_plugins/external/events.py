"""Events a plugin pushes (``promoter.scm/v1.1``): a ref moved, a status changed, a PR changed.

After ``events/subscribe`` names the repositories the promoter serves through the
plugin, the plugin may write JSON-RPC notifications (no ``id``) on its stdout, at any
time and between answers. Their parameters are the models here; the subscription
(``subscription``) validates each and hands it to its ``EventSink``, which treats it
like a webhook delivery: it wakes the strategies that track what moved. Events are
hints, as webhooks are: the reconcile they cause reads everything fresh, and one that is
lost is healed by the periodic resync.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from pydantic import Field

from promoter.config import Repository
from promoter.models import CommitStatus, PullRequest
from scm_plugins.external.messages import Message


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


Event = RefMoved | StatusChanged | PullRequestChanged

EVENTS: dict[str, type[Event]] = {
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
