"""Applying a normalised event: strategy keys to enqueue and statuses for the cache.

Pure in-memory work (index look-ups, one cache write, one non-blocking enqueue):
no git and no SCM call, so it runs inside the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from promoter.models import CommitStatus, PullRequestState
from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from webhooks.events import (
    Event,
    Ignored,
    Ping,
    PullRequestChange,
    Push,
    PushBatch,
    StatusBatch,
    StatusChange,
)
from webhooks.index import StrategyIndex

Enqueue = Callable[[Iterable[str]], None]
HasTip = Callable[[str, str, str], bool]
"""(repository, branch, sha): whether the promoter's copy already has the branch there."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What an event led to: ``accepted`` (keys enqueued, cache updated), ``ignored``, ``ping``."""

    result: str
    keys: frozenset[str] = frozenset()
    repositories: tuple[str, ...] = ()
    reason: str = ""


PING = Applied("ping")
QUIET = frozenset({"opened", "merge_attempted"})
"""Pull request actions that tell nothing new of the PR the promoter knows at that head: its
opening (the promoter's own), and the merge commit Azure DevOps made for it."""


class Dispatcher:
    def __init__(
        self,
        *,
        index: StrategyIndex,
        sha_index: ShaIndex,
        status_cache: StatusCache,
        enqueue: Enqueue,
        wake: Enqueue | None = None,
        pr_cache: PullRequestCache | None = None,
        has_tip: HasTip | None = None,
    ) -> None:
        """``enqueue`` wakes strategies whose git refs may have moved; ``wake`` (default:
        ``enqueue``) those that only need to read a status of a commit they know, or a
        push to a tip their copy has already (``has_tip``: the promoter's own merge).
        ``pr_cache`` forgets a pull request a webhook says was merged, closed or changed."""
        self._pr_cache = pr_cache
        self._index = index
        self._shas = sha_index
        self._cache = status_cache
        self._enqueue = enqueue
        self._wake = wake or enqueue
        self._has_tip = has_tip

    def apply(self, event: Event) -> Applied:
        if isinstance(event, Ping):
            return PING
        if isinstance(event, Ignored):
            return Applied("ignored", reason=event.reason)
        repos = self._index.repositories(event.repo)
        if not repos:
            return Applied("ignored", reason="unknown repository")
        return self.apply_to(event, repos)

    def apply_to(
        self,
        event: Push | PushBatch | StatusChange | StatusBatch | PullRequestChange,
        repos: tuple[str, ...],
    ) -> Applied:
        """``event`` about these configured repositories: for a source that names them
        itself (a plugin's events, ``webhooks.plugin_events``)."""
        enqueue = self._enqueue
        if isinstance(event, Push | PushBatch):
            pushes = event.pushes if isinstance(event, PushBatch) else (event,)
            found = [self._push(push, repos) for push in pushes]
            keys = frozenset().union(*(k for k in found if k)) or None
            if all(self._already_have(push, repos) for push in pushes):
                enqueue = self._wake  # our own merge, say: nothing to fetch
        elif isinstance(event, StatusChange | StatusBatch):
            tracking = self._shas.strategies_for(event.sha)
            changes = event.changes if isinstance(event, StatusBatch) else (event,)
            keys = frozenset().union(*(self._status(c, repos, tracking) for c in changes))
            if tracking:  # a commit they have read: no ref moved
                enqueue = self._wake
        else:
            keys = self._pull_request(event, repos)
        if keys is None:
            return Applied("ignored", repositories=repos, reason="nothing the promoter watches")
        if keys:
            enqueue(keys)
        return Applied("accepted", keys, repos)

    def _push(self, event: Push, repos: tuple[str, ...]) -> frozenset[str] | None:
        branch = event.branch
        keys: set[str] = set()
        # A commit pushed for the first time that no strategy has read yet: every status
        # it gets reaches the cache by webhook, so reading it from the SCM would tell
        # nothing more (a lost webhook is healed by the next resync, which reads it).
        announced = event.after if event.new_commit and branch is not None else None
        if announced is not None and self._shas.strategies_for(announced):
            announced = None
        for repo in repos:
            if announced is not None:
                self._cache.created(repo, announced)
            if event.is_notes:  # hydrator notes (or the ledger) moved: every strategy reads them
                keys |= self._index.strategies(repo)
            elif branch is not None:
                keys |= self._index.for_push(repo, branch)
        return frozenset(keys) or None

    def _already_have(self, event: Push, repos: tuple[str, ...]) -> bool:
        branch, after, has_tip = event.branch, event.after, self._has_tip
        if branch is None or after is None or has_tip is None:
            return False
        return all(has_tip(repo, branch, after) for repo in repos)

    def _status(
        self, event: StatusChange, repos: tuple[str, ...], tracking: set[str]
    ) -> frozenset[str]:
        keys: set[str] = set()
        for repo in repos:
            status = CommitStatus(
                key=event.key or self._index.pipeline_gate_key(repo),
                phase=event.phase,
                description=event.description,
                url=event.url,
                source=event.source,
                updated_at=event.updated_at,
                revision=event.revision,
            )
            if not self._cache.put(repo, event.sha, status):
                continue  # the echo of the promoter's own write: nothing new to decide on
            mine = self._index.strategies(repo)
            # A SHA no strategy tracks yet may be one the reconciler has not read: wake them all.
            keys |= (tracking & mine) or mine
        return frozenset(keys)

    def _pull_request(
        self, event: PullRequestChange, repos: tuple[str, ...]
    ) -> frozenset[str] | None:
        tracking = self._shas.strategies_for(event.head_sha) if event.head_sha else set()
        keys: set[str] = set()
        for repo in repos:
            if self._pr_cache is not None:
                # What the promoter knew of this PR may be wrong now (a person merged or
                # closed it, its head moved): the next reconcile reads it from the SCM,
                # unless the event says the very PR it knew has ended, or was just opened
                # at the head it knows (the promoter's own opening).
                key = (repo, event.head_branch, event.base_branch)
                if event.state is not PullRequestState.OPEN and event.number is not None:
                    self._pr_cache.ended(key, event.number)
                elif event.action in QUIET and event.number is not None and event.head_sha:
                    self._pr_cache.opened(key, event.number, event.head_sha)
                else:
                    self._pr_cache.forget(key)
            keys |= self._index.for_pull_request(repo, event.head_branch, event.base_branch)
            keys |= tracking & self._index.strategies(repo)
        return frozenset(keys) or None
