"""Keeps CommitStatus objects in step with the gates and, on their owner, with the SCM.

A changed object updates the index the gates read (on every replica) and wakes the
strategies tracking its commit; the replica that works on its repository (``mine``:
the leader, or the holder of the repository's shard) then publishes it on the SCM once
per generation and phase, and writes ``status.mirroredPhase``; an object that names no
valid repository gets ``Ready=False`` with the reason, from the leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from promoter.kube.cluster_runtime import ClusterRuntime
from promoter.kube.commit_statuses import CommitStatusIndex, needs_mirror, parse
from promoter.kube.config_source import split_name
from promoter.kube.status import ready_status
from promoter.kube.status_writer import StatusWriter

log = logging.getLogger("promoter.kube.commit_statuses")

Obj = dict[str, Any]
Ident = tuple[str, str]


class CommitStatusSync:
    def __init__(
        self,
        *,
        index: CommitStatusIndex,
        writer: StatusWriter,
        runtime: Callable[[], ClusterRuntime],
        mine: Callable[[str | None], bool],
        objects: Callable[[], dict[Ident, Obj]],
        wake: Callable[[], None],
    ) -> None:
        """``mine(repository)``: whether this replica writes for it (None: for none)."""
        self.index = index
        self.writer = writer
        self.runtime = runtime
        self.mine = mine
        self.objects = objects
        self.wake = wake
        self._lock = threading.Lock()
        self._pending: set[Ident] = set()

    def changed(self, kind: str, obj: Obj) -> None:
        """A watch event (on any replica)."""
        meta = obj.get("metadata", {})
        ident = (str(meta.get("namespace")), str(meta.get("name")))
        runtime = self.runtime()
        if kind == "DELETED":
            self.index.remove(*ident)
            runtime.queue.add_many(  # a gate went away: read the strategies again
                s.name for s in runtime.config.promotion_strategies if self.mine(s.repository)
            )
            return
        try:
            repo, sha, status = parse(obj)
        except ValueError:
            self._mark({ident})  # the leader writes Ready=False
            return
        self.index.put(obj, (repo, sha, status))
        if not self.mine(repo):
            return  # its owner saw the same event
        runtime.status_cache.put(repo, sha, status)
        tracking = set(runtime.sha_index.strategies_for(sha))
        if tracking:
            runtime.wake(tracking)
        else:
            runtime.enqueue(runtime.strategies_of(repo))
        self._mark({ident})

    def mark_all(self) -> None:
        """A new leader checks every object (most are mirrored already: no SCM call)."""
        self._mark(set(self.objects()))

    def _mark(self, idents: set[Ident]) -> None:
        with self._lock:
            self._pending |= idents
        self.wake()

    def mirror_pending(self) -> None:
        """Publish what changed on the SCM and write the objects' status, for the objects
        this replica writes for (the others are its owner's; ``mark_all`` brings them
        back when this replica takes over)."""
        with self._lock:
            pending, self._pending = self._pending, set()
        objects = self.objects()
        for ident in sorted(pending):
            obj = objects.get(ident)
            if obj is None or not self.mine(self._repository(obj)):
                continue
            if not self._mirror(obj):
                with self._lock:
                    self._pending.add(ident)  # retried on the next pass

    def _repository(self, obj: Obj) -> str | None:
        """The configured repository ``obj`` names, None when it names none."""
        try:
            repo_name, _, _ = parse(obj)
        except ValueError:
            return None
        try:
            self.runtime().config.repository(repo_name)
        except KeyError:
            return None
        return repo_name

    def _mirror(self, obj: Obj) -> bool:
        try:
            repo_name, sha, status = parse(obj)
        except ValueError as exc:
            self.writer.write("commitstatuses", obj, ready_status(obj, str(exc)))
            return True
        runtime = self.runtime()
        repo = next((r for r in runtime.config.repositories if r.name == repo_name), None)
        if repo is None:
            problem = f"GitRepository {split_name(repo_name)[1]} is missing or invalid"
            self.writer.write("commitstatuses", obj, ready_status(obj, problem))
            return True
        if not needs_mirror(obj, status.phase.value):
            return True
        try:
            runtime.plugins[repo.scm_provider].set_commit_status(repo=repo, sha=sha, status=status)
        except Exception as exc:
            log.warning(
                "commit status not mirrored",
                extra={"sha": sha, "key": status.key, "error": str(exc)},
            )
            return False
        extra = {"mirroredPhase": status.phase.value}
        self.writer.write("commitstatuses", obj, ready_status(obj, None, extra=extra))
        return True
