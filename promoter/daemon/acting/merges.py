"""Carrying out a merge: re-read the gates, merge with the head guard, and never lose
track of a merge whose answer was lost.

A required gate that is no longer success in the re-read defers the merge (``Deferred``,
with its reason for the view); the next reconcile decides again on what it reads then.

A merge the SCM answered with a 5xx (or a dropped connection) may have happened. It is
remembered as *unconfirmed*: the next reconcile reads everything fresh (the PR and the
mirror are forgotten first), and when the active branch contains the merged head the
merge is counted then, once. Nothing is closed or commented on meanwhile, because the
pull request is re-read before that (see ``Executor``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from promoter.config import Repository
from promoter.daemon.acting.pull_requests import PrKey
from promoter.engine import (
    MergePullRequest,
    Snapshot,
    short_sha,
)
from promoter.errors import ScmConflict, ScmUnavailable
from promoter.git import GitMirror
from promoter.metrics import PROMOTIONS_TOTAL
from promoter.models import CommitStatus, Phase
from promoter.state import PullRequestCache
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.actions")


@dataclass(frozen=True)
class Merged:
    sha: str
    """The merge commit."""


@dataclass(frozen=True)
class Deferred:
    reason: str
    """Which required gates are not success on the head, for the view."""


@dataclass(frozen=True)
class Unconfirmed:
    head_sha: str
    dry_sha: str
    purpose: str
    number: int


@dataclass
class UnconfirmedMerges:
    """Merges whose answer was lost, by (strategy, environment branch). Thread-safe."""

    _entries: dict[tuple[str, str], Unconfirmed] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def remember(self, strategy: str, branch: str, merge: Unconfirmed) -> None:
        with self._lock:
            self._entries[(strategy, branch)] = merge

    def settle(self, snapshot: Snapshot, mirror: GitMirror) -> list[tuple[str, Unconfirmed]]:
        """The remembered merges of ``snapshot`` that the active branches now contain: the
        merged head in their history, or (a squash or rebase leaves no second parent) the
        merged dry commit running there."""
        done = []
        with self._lock:
            for env in snapshot.environments:
                merge = self._entries.get((snapshot.strategy, env.branch))
                if merge is None or env.active is None:
                    continue
                landed = env.active.dry_sha == merge.dry_sha or mirror.is_ancestor(
                    merge.head_sha, env.active.hydrated_sha
                )
                if landed:
                    del self._entries[(snapshot.strategy, env.branch)]
                    done.append((env.branch, merge))
        return done

    def forget(self, strategy: str, branch: str) -> None:
        with self._lock:
            self._entries.pop((strategy, branch), None)


def count_settled(snapshot: Snapshot, mirror: GitMirror, merges: UnconfirmedMerges) -> None:
    """Count the merges whose answer was lost, now that git shows they happened."""
    for branch, merge in merges.settle(snapshot, mirror):
        if merge.purpose != "revert":
            PROMOTIONS_TOTAL.inc(snapshot.strategy, branch)
        log.info(
            "merge found done",
            extra={
                "strategy": snapshot.strategy,
                "environment": branch,
                "pr": merge.number,
                "sha": merge.dry_sha,
            },
        )


@dataclass
class Merger:
    plugin: ScmPlugin
    gates: Callable[[Repository, str, tuple[str, ...]], dict[str, CommitStatus]]
    pr_cache: PullRequestCache
    unconfirmed: UnconfirmedMerges
    on_merged: Callable[[Repository], None]

    def merge(
        self, snapshot: Snapshot, repo: Repository, action: MergePullRequest, key: PrKey
    ) -> Merged | Deferred:
        """Merged, or deferred when a required gate is no longer success on the SCM."""
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        statuses = self.gates(repo, action.expected_head_sha, action.required_keys)
        stale = [
            k
            for k in action.required_keys
            if getattr(statuses.get(k), "phase", None) is not Phase.SUCCESS
        ]
        if stale:
            log.info("merge deferred: gates changed", extra={**fields, "gates": stale})
            return Deferred(deferral(stale, statuses, action.expected_head_sha))
        try:
            merge_sha = self.plugin.merge_pull_request(
                repo=repo,
                number=action.number,
                expected_head_sha=action.expected_head_sha,
                message=action.message,
            )
        except ScmConflict:
            self.on_merged(repo)
            raise
        except ScmUnavailable:
            # The merge may have happened: read everything afresh before anything else.
            self.unconfirmed.remember(
                snapshot.strategy,
                env.branch,
                Unconfirmed(
                    action.expected_head_sha, action.dry_sha, action.purpose, action.number
                ),
            )
            self.pr_cache.forget(key)
            self.on_merged(repo)
            log.warning("merge answer lost, will re-read", extra=fields)
            raise
        self.unconfirmed.forget(snapshot.strategy, env.branch)
        self.pr_cache.put(key, None)
        if action.purpose != "revert":
            PROMOTIONS_TOTAL.inc(snapshot.strategy, env.branch)
        log.info(
            "pull request merged",
            extra={**fields, "sha": action.dry_sha, "merge": merge_sha, "purpose": action.purpose},
        )
        self.on_merged(repo)
        return Merged(merge_sha)


def deferral(stale: list[str], statuses: dict[str, CommitStatus], head_sha: str) -> str:
    """Why a merge waits: "merge deferred: ci is pending on 1a2b3c4"."""
    said = []
    for key in stale:
        status = statuses.get(key)
        if status is None:
            said.append(f"{key} has no status")
        elif status.phase is Phase.FAILURE:
            said.append(f"{key} failed")
        else:
            said.append(f"{key} is {status.phase.value}")
    return f"merge deferred: {', '.join(said)} on {short_sha(head_sha)}"
