"""A plugin's events (``promoter.scm/v1.1``), applied like webhook deliveries.

``PluginEvents`` is what the composition root subscribes to every plugin that sends
events (it is an ``EventSink`` of ``scm_plugins.external.events``, by shape): each
event becomes the normalised webhook event it means and goes through the same
``Dispatcher``, so it wakes the strategies that track what moved and a status reaches
the cache, exactly as the SCM's own webhook would. The plugin names the configured
repository itself, so nothing is matched by URL. No git and no SCM call here: it runs
on the plugin's reader thread.
"""

from __future__ import annotations

import logging

from promoter.models import CommitStatus, PullRequest
from webhooks.dispatch import Applied, Dispatcher
from webhooks.events import PullRequestChange, Push, RepoIdentity, StatusChange

log = logging.getLogger("promoter.webhooks")


class PluginEvents:
    """The daemon's sink for the events of the plugin serving ``provider``."""

    def __init__(self, dispatcher: Dispatcher, *, provider: str) -> None:
        self._dispatcher = dispatcher
        self._ident = RepoIdentity(provider="plugin", full_path="")
        self.provider = provider

    def ref_moved(
        self, *, repository: str, ref: str, before: str | None, after: str | None
    ) -> None:
        self._apply(Push(self._ident, ref, before, after), repository)

    def status_changed(self, *, repository: str, sha: str, status: CommitStatus) -> None:
        change = StatusChange(
            repo=self._ident,
            sha=sha.lower(),
            key=status.key,
            phase=status.phase,
            description=status.description,
            url=status.url,
            source=status.source or f"plugin/{self.provider}",
            updated_at=status.updated_at,
            revision=status.revision,
        )
        self._apply(change, repository)

    def pull_request_changed(self, *, repository: str, pull_request: PullRequest) -> None:
        pr = pull_request
        change = PullRequestChange(
            repo=self._ident,
            pr_id=pr.id,
            number=pr.number,
            state=pr.state,
            action="changed",
            head_branch=pr.head_branch,
            base_branch=pr.base_branch,
            head_sha=pr.head_sha or None,
        )
        self._apply(change, repository)

    def _apply(self, event: Push | StatusChange | PullRequestChange, repository: str) -> Applied:
        applied = self._dispatcher.apply_to(event, (repository,))
        log.debug(
            "plugin event",
            extra={
                "provider": self.provider,
                "repository": repository,
                "event": type(event).__name__,
                "result": applied.result,
                "keys": sorted(applied.keys),
            },
        )
        return applied
