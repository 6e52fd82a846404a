"""The local SCM's merge queue (``local.mergeQueue``), working as GitHub's does.

A pull request enqueued with its head as the guard gets a *merge group*: a commit that
merges its head into its base's tip (by the provider's ``mergeMethod``). CI reports the
queue's ``checks`` on that commit; once every one is success the queue moves the base to
it (compare-and-swap, the PR recorded merged first, as ``merge_pull_request`` does), and a
failure takes the PR out of the queue, with why. A head that moves, a PR closed or merged
by a person, a merge that conflicts take it out too; a base that moves (another merge) has
the group built again on the new tip, its checks to be reported anew. Nothing polls: the
queue moves when a status lands on a group commit (``set_commit_status``), or when it is
asked to (``advance_queue``: the tests and the model drive it by hand).

``dequeue_pull_request`` takes a PR out at once. A PR the queue merged first answers
``merged``; one that is not in the queue is left as it is; neither is an error.
Mixed into ``LocalScm``, whose lock per repository guards the queue as it guards merges.
"""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Literal

from promoter.config import LocalMergeQueue, Repository
from promoter.errors import ScmConflict, ScmNotFound
from promoter.models import Phase, QueueEntry
from scm_plugins.calls import ScmCalls
from scm_plugins.local import merging
from scm_plugins.local.store import LocalStore

DEQUEUED = "taken out of the merge queue on request"
MERGED = "merged"


class LocalQueue(ABC):
    """The merge-queue half of ``LocalScm`` (``MergeQueues`` and ``MergeQueueDetection``)."""

    merge_queue_scope: Literal["branch", "repository"] = "branch"
    store: LocalStore
    _calls: ScmCalls
    _merge_method: merging.MergeMethod
    _queue_settings: LocalMergeQueue | None

    @abstractmethod
    def _tips(self, repo: Repository, *branches: str) -> dict[str, str]: ...

    @abstractmethod
    def _lock(self, repo: Repository) -> threading.Lock: ...

    @abstractmethod
    def _open_row(self, repo: Repository, number: int) -> sqlite3.Row: ...

    @abstractmethod
    def _is_ancestor(self, repo: Repository, ancestor: str, descendant: str) -> bool: ...

    @abstractmethod
    def _git(self, repo: Repository, *args: str) -> str: ...

    @abstractmethod
    def _local_git(self, repo: Repository) -> merging.LocalGit: ...

    @abstractmethod
    def _record_merge(
        self, repo: Repository, number: int, *, head_sha: str, merge_sha: str
    ) -> None: ...

    # --- MergeQueueDetection ---------------------------------------------------------

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        settings = self._queue_settings
        return settings is not None and (not settings.branches or branch in settings.branches)

    # --- MergeQueues -----------------------------------------------------------------

    def enqueue_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str
    ) -> QueueEntry:
        with (
            self._calls.call("enqueue_pull_request", repository=repo.name, pr=number),
            self._lock(repo),
        ):
            row = self._open_row(repo, number)
            if not self.merge_queue_required(repo=repo, branch=row["base"]):
                raise ScmConflict(f"{row['base']} has no merge queue", lasting=True)
            tips = self._tips(repo, row["head"], row["base"])
            if tips.get(row["head"]) != expected_head_sha:
                raise ScmConflict("Expected head OID does not match the pull request")
            self._refresh(repo)
            if self.store.queued(repo.name, number) is None:
                base_sha = tips[row["base"]]
                group = self._group(repo, number, row["head"], base_sha, expected_head_sha)
                self.store.enqueue(
                    repo.name,
                    number,
                    base=row["base"],
                    head_sha=expected_head_sha,
                    base_sha=base_sha,
                    group_sha=group,
                )
            return self._entry(repo, number)

    def queue_entry(self, *, repo: Repository, number: int) -> QueueEntry:
        with (
            self._calls.call("get_merge_queue_entry", repository=repo.name, pr=number),
            self._lock(repo),
        ):
            self._refresh(repo)
            return self._entry(repo, number)

    def dequeue_pull_request(self, *, repo: Repository, number: int) -> QueueEntry:
        with (
            self._calls.call("dequeue_pull_request", repository=repo.name, pr=number),
            self._lock(repo),
        ):
            if self.store.get(repo.name, number) is None:
                raise ScmNotFound(f"pull request {number} not found in {repo.name}")
            self._refresh(repo)
            if self.store.queued(repo.name, number) is not None:
                self.store.dequeue(repo.name, number, DEQUEUED)
            return self._entry(repo, number)

    # --- the queue at work -----------------------------------------------------------

    def advance_queue(self, *, repo: Repository) -> list[int]:
        """Merge every queued PR whose group passed its checks, take out those whose group
        failed one; the PRs merged."""
        merged: list[int] = []
        with self._calls.call("advance_queue", repository=repo.name), self._lock(repo):
            self._refresh(repo)
            for entry in self.store.queue(repo.name):
                phase, keys = self._checks(repo, entry["group_sha"])
                if phase is Phase.FAILURE:
                    why = f"a required check failed on the merge group: {', '.join(keys)}"
                    self.store.dequeue(repo.name, entry["pr_id"], why)
                elif phase is Phase.SUCCESS and self._merge(repo, entry):
                    merged.append(entry["pr_id"])
                    self._refresh(repo)  # the groups after it stand on the old base
        return merged

    def queue_groups(self, *, repo: Repository) -> dict[int, str]:
        """``PR number -> merge group commit`` of the PRs in the queue (what CI tests)."""
        with self._lock(repo):
            self._refresh(repo)
            return {row["pr_id"]: row["group_sha"] for row in self.store.queue(repo.name)}

    def _status_landed(self, repo: Repository, sha: str) -> None:
        """A status was set on ``sha``: the queue moves when it is one of its groups'."""
        if self._queue_settings is None:
            return
        if any(row["group_sha"] == sha for row in self.store.queue(repo.name)):
            self.advance_queue(repo=repo)

    def _merge(self, repo: Repository, entry: sqlite3.Row) -> bool:
        """Move the base to the group (compare-and-swap); False when it moved meanwhile."""
        number, group, head = entry["pr_id"], entry["group_sha"], entry["head_sha"]
        self.store.update(repo.name, number, merging_head=head, merging_sha=group)
        try:
            self._git(repo, "update-ref", f"refs/heads/{entry['base']}", group, entry["base_sha"])
        except subprocess.CalledProcessError:
            self.store.update(repo.name, number, merging_head=None, merging_sha=None)
            return False  # tried again once its group is built on the base's new tip
        self._record_merge(repo, number, head_sha=head, merge_sha=group)
        self.store.dequeue(repo.name, number, MERGED)
        return True

    def _refresh(self, repo: Repository) -> None:
        """Take out what the queue no longer holds; build again the groups whose base moved."""
        for entry in self.store.queue(repo.name):
            number, head_sha = entry["pr_id"], entry["head_sha"]
            row = self.store.get(repo.name, number)
            tips = self._tips(repo, entry["base"], row["head"] if row else entry["base"])
            base_tip = tips.get(entry["base"], "")
            if row is None or row["state"] != "open":
                state = row["state"] if row is not None else "gone"
                self.store.dequeue(repo.name, number, f"pull request #{number} is {state}")
            elif base_tip and self._is_ancestor(repo, head_sha, base_tip):
                self.store.update(repo.name, number, state="merged", head_sha=head_sha)
                self.store.dequeue(repo.name, number, "merged outside the queue")
            elif tips.get(row["head"]) != head_sha:
                why = "its head moved: the queue merges only the head it was given"
                self.store.dequeue(repo.name, number, why)
            elif base_tip != entry["base_sha"]:
                try:
                    group = self._group(repo, number, row["head"], base_tip, head_sha)
                except ScmConflict as exc:
                    self.store.dequeue(repo.name, number, str(exc))
                else:
                    self.store.regroup(repo.name, number, base_sha=base_tip, group_sha=group)

    def _group(self, repo: Repository, number: int, head: str, base_sha: str, head_sha: str) -> str:
        """The merge group of PR ``number``: its head merged into ``base_sha``."""
        return merging.merge(
            self._local_git(repo),
            method=self._merge_method,
            base=base_sha,
            head=head_sha,
            message=f"Merge pull request #{number} from {head}",
            number=number,
        )

    def _checks(self, repo: Repository, group_sha: str) -> tuple[Phase, list[str]]:
        """The queue's checks on a group: failure (the keys that failed), success, or pending."""
        settings = self._queue_settings
        keys = settings.checks if settings is not None else []
        phases = {s.key: s.phase for s in self.store.statuses(repo.name, group_sha)}
        failed = [k for k in keys if phases.get(k) is Phase.FAILURE]
        if failed:
            return Phase.FAILURE, failed
        if all(phases.get(k) is Phase.SUCCESS for k in keys):
            return Phase.SUCCESS, []
        return Phase.PENDING, [k for k in keys if phases.get(k) is not Phase.SUCCESS]

    def _entry(self, repo: Repository, number: int) -> QueueEntry:
        """Where PR ``number`` stands: its place and its group's checks, or why it left."""
        rows = self.store.queue(repo.name)
        position = next((i for i, r in enumerate(rows, 1) if r["pr_id"] == number), None)
        if position is not None:
            phase, _ = self._checks(repo, rows[position - 1]["group_sha"])
            state = "AWAITING_CHECKS" if phase is Phase.PENDING else "MERGEABLE"
            return QueueEntry(queued=True, state=state, position=position, checks=phase.name)
        row = self.store.get(repo.name, number)
        merged = row is not None and row["state"] == "merged"
        removal = self.store.removal(repo.name, number)
        if removal is None:
            return QueueEntry(queued=False, merged=merged)
        return QueueEntry(
            queued=False,
            removed_reason=removal["reason"],
            removed_at=datetime.fromisoformat(removal["at"]),
            merged=merged,
        )
