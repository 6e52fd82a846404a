"""The merge queue part of an environment's snapshot (``Queueing``): whether the branch merges
through the SCM's queue, and the open PR's place in it while the promoter's attempt waits there.

When the configuration does not say (``mergeQueue`` unset), the SCM's answer is read once
per branch (GitHub) or per repository (GitLab), for branches the promoter merges, and kept
for ``keep_for`` seconds.

An answer that cannot be had or read (no permission, 404, another shape) is "no queue",
kept the same way and logged once, so that it never costs a call per reconcile; after a
5xx or a rate limit the SCM is asked again sooner (``retry_for``).
A merge the SCM refuses for want of the queue teaches it otherwise (``learn``). An SCM
instance that lacks the queue altogether (``ScmUnsupported`` on an enqueue: a GitHub
Enterprise Server release without it) is remembered for ``keep_for`` (``lacks``): the
environment is shown in error with what the instance lacks, alone, and not asked again
meanwhile. Thread-safe: the workers share one.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from promoter.config import Environment, Repository
from promoter.engine import EnvLedger, Queueing
from promoter.errors import ScmError, ScmRateLimited, ScmUnavailable
from promoter.models import PullRequest, QueueEntry
from scm_plugins.protocol import MergeQueueDetection, MergeQueues

log = logging.getLogger("promoter.reader")

KEEP_FOR = 3600.0
"""Seconds an answer is kept before the SCM is asked again."""
RETRY_FOR = 300.0
"""Seconds "no queue" is kept after the SCM was unavailable or rate limited."""

OUT_OF_QUEUE = {
    (on, from_scm): Queueing(on=on, from_scm=from_scm)
    for on in (False, True)
    for from_scm in (False, True)
}
"""The parts without a queue entry (the common case, shared)."""


@dataclass
class QueueDetection:
    keep_for: float = KEEP_FOR
    retry_for: float = RETRY_FOR
    clock: Callable[[], float] = time.monotonic
    _known: dict[tuple[str, str], tuple[bool, float]] = field(default_factory=dict)
    _unreadable: set[tuple[str, str]] = field(default_factory=set)
    _lacking: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _detects: weakref.WeakKeyDictionary[object, bool] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    """Per plugin, whether it can tell (``isinstance`` against a runtime-checkable protocol
    looks each member up, tens of microseconds, for every environment of every reconcile)."""

    def read(
        self,
        plugin: object,
        repo: Repository,
        env: Environment,
        pr: PullRequest | None,
        ledger: EnvLedger,
    ) -> Queueing:
        """Whether ``env`` merges through a queue (configured, else as the SCM says), and the
        open PR's place in it: read only while the promoter's attempt for that PR and head
        waits there (one call)."""
        from_scm = env.merge_queue is None
        if env.merge_queue is not None:
            queued = env.merge_queue
        else:
            queued = env.auto_merge and self.required(plugin, repo, env.branch)
        entry = self._entry(plugin, repo, queued, pr, ledger)
        if entry is None:
            return OUT_OF_QUEUE[queued, from_scm]
        return Queueing(on=queued, from_scm=from_scm, entry=entry)

    @staticmethod
    def _entry(
        plugin: object, repo: Repository, queued: bool, pr: PullRequest | None, ledger: EnvLedger
    ) -> QueueEntry | None:
        attempt = ledger.queue
        if not queued or pr is None or attempt is None or not attempt.waiting:
            return None
        if (attempt.number, attempt.head_sha) != (pr.number, pr.head_sha):
            return None
        if not isinstance(plugin, MergeQueues):
            return None
        return plugin.queue_entry(repo=repo, number=pr.number)

    def required(self, plugin: object, repo: Repository, branch: str) -> bool:
        """Whether merges into ``branch`` must go through the queue, as the SCM says; False
        for a plugin that cannot tell."""
        if not self._can_detect(plugin):
            return False
        plugin = cast(MergeQueueDetection, plugin)
        key = _key(plugin, repo, branch)
        with self._lock:
            known = self._known.get(key)
        if known is not None and self.clock() < known[1]:
            return known[0]
        try:
            found = plugin.merge_queue_required(repo=repo, branch=branch)
        except ScmError as exc:
            self._unread(key, repo, branch, exc)
            passing = isinstance(exc, ScmUnavailable | ScmRateLimited)
            self._keep(key, False, self.retry_for if passing else self.keep_for)
            return False
        with self._lock:
            self._unreadable.discard(key)
        self._keep(key, found, self.keep_for)
        return found

    def _can_detect(self, plugin: object) -> bool:
        try:
            detects = self._detects.get(plugin)
        except TypeError:  # not weakly referable: asked every time
            return isinstance(plugin, MergeQueueDetection)
        if detects is None:
            detects = self._detects[plugin] = isinstance(plugin, MergeQueueDetection)
        return detects

    def learn(self, plugin: object, repo: Repository, branch: str) -> None:
        """The SCM refused a merge into ``branch`` for want of its queue: it has one."""
        if isinstance(plugin, MergeQueueDetection):
            self._keep(_key(plugin, repo, branch), True, self.keep_for)

    def lacks(self, repo: Repository, branch: str, reason: str) -> None:
        """The SCM instance has no queue for ``branch``: ``reason`` says so, for a while."""
        key = (repo.name, branch)
        with self._lock:
            self._lacking[key] = (reason, self.clock() + self.keep_for)

    def lacking(self, repo: Repository, branch: str) -> str | None:
        """Why ``branch``'s queue cannot be used on this instance, while that is known."""
        key = (repo.name, branch)
        with self._lock:
            found = self._lacking.get(key)
            if found is not None and self.clock() >= found[1]:
                del self._lacking[key]
                found = None
        return found[0] if found is not None else None

    def _keep(self, key: tuple[str, str], found: bool, seconds: float) -> None:
        with self._lock:
            self._known[key] = (found, self.clock() + seconds)

    def _unread(self, key: tuple[str, str], repo: Repository, branch: str, exc: ScmError) -> None:
        with self._lock:
            told = key in self._unreadable
            self._unreadable.add(key)
        if not told:
            log.warning(
                "merge queue not detected: the SCM's answer could not be read",
                extra={"repository": repo.name, "environment": branch, "reason": str(exc)},
            )


def _key(plugin: MergeQueueDetection, repo: Repository, branch: str) -> tuple[str, str]:
    return (repo.name, branch if plugin.merge_queue_scope == "branch" else "")
