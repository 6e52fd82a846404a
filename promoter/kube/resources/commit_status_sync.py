"""Keeps CommitStatus objects in step with the gates and, on their owner, with the SCM.

A changed object updates the index the gates read (on every replica) and wakes the
strategies tracking its commit; the replica that works on its repository (``mine``:
the leader, or the holder of the repository's shard; for an object that names no valid
repository, the leader) then publishes it on the SCM once per generation and phase, and
writes ``status.mirroredPhase`` with ``Ready=True``, or ``Ready=False`` with why it
cannot: an invalid spec, a GitRepository that is missing or invalid, or the SCM's own
words when it refused or did not answer (a SHA it does not know answers 422). A refused
object is tried again with exponential backoff, capped at ``daemon.maxBackoff``, and at
once when its spec, its GitRepository or its ScmProvider changes; never in a loop. Each
SCM call has a deadline (``MIRROR_TIMEOUT``) and runs off the controller's thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from promoter.config import Config
from promoter.daemon import GateCalls, Runtime, words_of
from promoter.errors import HoldLapsed, NotOwner
from promoter.kube.resources.commit_statuses import CommitStatusIndex, needs_mirror, parse
from promoter.kube.resources.config_source import split_name
from promoter.kube.resources.status import ready_status
from promoter.kube.resources.status_writer import StatusWriter

log = logging.getLogger("promoter.kube.commit_statuses")

Obj = dict[str, Any]
Ident = tuple[str, str]

MIRROR_TIMEOUT = 10.0
"""Seconds the SCM has to take one CommitStatus."""
FIRST_RETRY = 1.0
"""Seconds before the first retry of an object the SCM refused; doubled each time."""


@dataclass(frozen=True)
class _Retry:
    failures: int
    due: float


def _ident(obj: Obj) -> Ident:
    meta = obj.get("metadata", {})
    return str(meta.get("namespace")), str(meta.get("name"))


class CommitStatusSync:
    def __init__(
        self,
        *,
        index: CommitStatusIndex,
        writer: StatusWriter,
        runtime: Callable[[], Runtime],
        mine: Callable[[str | None], bool],
        objects: Callable[[], dict[Ident, Obj]],
        wake: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``mine(repository)``: whether this replica writes for it (None: for none);
        ``runtime()``: the replica's runtime of the moment (the cluster's, whose
        ``enqueue`` and ``wake`` pass the keys that are not this replica's to their owner)."""
        self.index = index
        self.writer = writer
        self.runtime = runtime
        self.mine = mine
        self.objects = objects
        self.wake = wake
        self.clock = clock
        self.calls = GateCalls(per_backend=2)
        self._lock = threading.Lock()
        self._pending: set[Ident] = set()
        self._retries: dict[Ident, _Retry] = {}
        self._generations: dict[Ident, Any] = {}

    def changed(self, kind: str, obj: Obj) -> None:
        """A watch event (on any replica)."""
        ident = _ident(obj)
        runtime = self.runtime()
        if kind == "DELETED":
            self.index.remove(*ident)
            with self._lock:
                self._retries.pop(ident, None)
                self._generations.pop(ident, None)
            runtime.queue.add_many(  # a gate went away: read the strategies again
                s.name for s in runtime.config.promotion_strategies if self.mine(s.repository)
            )
            return
        generation = obj.get("metadata", {}).get("generation")
        with self._lock:
            if self._generations.get(ident, object()) != generation:
                self._generations[ident] = generation
                self._retries.pop(ident, None)  # a new spec is tried at once
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

    def config_changed(self, before: Config, after: Config) -> None:
        """Objects whose GitRepository or ScmProvider appeared, went or changed are
        evaluated again at once (a condition about them must not go stale)."""
        again = set()
        for ident, obj in self.objects().items():
            try:
                repo_name = parse(obj)[0]
            except ValueError:
                continue
            if _source(before, repo_name) != _source(after, repo_name):
                again.add(ident)
        with self._lock:
            for ident in again:
                self._retries.pop(ident, None)
        self._mark(again)

    def _mark(self, idents: set[Ident]) -> None:
        with self._lock:
            self._pending |= idents
        self.wake()

    def mirror_pending(self) -> None:
        """Publish what changed on the SCM and write the objects' status, for the objects
        this replica writes for (the others are its owner's; ``mark_all`` brings them
        back when this replica takes over). An object waiting for its retry stays
        pending without a call."""
        with self._lock:
            pending, self._pending = self._pending, set()
            retries = dict(self._retries)
        objects = self.objects()
        now = self.clock()
        for ident in sorted(pending):
            obj = objects.get(ident)
            if obj is None or not self.mine(self._repository(obj)):
                continue
            retry = retries.get(ident)
            if retry is not None and retry.due > now:
                with self._lock:
                    self._pending.add(ident)
                continue
            self._mirror(ident, obj)

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

    def _mirror(self, ident: Ident, obj: Obj) -> None:
        try:
            repo_name, sha, status = parse(obj)
        except ValueError as exc:
            self.writer.write("commitstatuses", obj, ready_status(obj, str(exc)))
            return
        runtime = self.runtime()
        repo = next((r for r in runtime.config.repositories if r.name == repo_name), None)
        if repo is None:
            problem = f"GitRepository {split_name(repo_name)[1]} is missing or invalid"
            self.writer.write("commitstatuses", obj, ready_status(obj, problem))
            return
        extra = {"mirroredPhase": status.phase.value}
        if needs_mirror(obj, status.phase.value):
            plugin = runtime.plugins[repo.scm_provider]
            try:
                self.calls.call(
                    f"scm {repo.scm_provider}",
                    lambda: plugin.set_commit_status(repo=repo, sha=sha, status=status),
                    timeout=MIRROR_TIMEOUT,
                )
            except (NotOwner, HoldLapsed):
                with self._lock:  # the next owner, or this replica once its hold is back
                    self._pending.add(ident)
                return
            except Exception as exc:
                self._refused(ident, obj, words_of(exc), runtime.config.daemon.max_backoff)
                return
        with self._lock:
            self._retries.pop(ident, None)
        self.writer.write("commitstatuses", obj, ready_status(obj, None, extra=extra))

    def _refused(self, ident: Ident, obj: Obj, words: str, cap: float) -> None:
        with self._lock:
            failures = self._retries[ident].failures + 1 if ident in self._retries else 1
            delay = min(FIRST_RETRY * 2 ** (failures - 1), cap)
            self._retries[ident] = _Retry(failures, self.clock() + delay)
            self._pending.add(ident)
        timer = threading.Timer(delay, self.wake)  # the controller runs it when due
        timer.daemon = True
        timer.start()
        log.warning(
            "commit status not mirrored",
            extra={"object": ident[1], "error": words, "retry_in": delay},
        )
        problem = f"the SCM did not take it: {words} (tried {failures}x; next in {delay:g}s)"
        self.writer.write("commitstatuses", obj, ready_status(obj, problem, reason="MirrorFailed"))


def _source(config: Config, repo_name: str) -> tuple[object, object]:
    """What a CommitStatus of ``repo_name`` is mirrored through in ``config``."""
    repo = next((r for r in config.repositories if r.name == repo_name), None)
    if repo is None:
        return None, None
    provider = next((p for p in config.scm_providers if p.name == repo.scm_provider), None)
    return repo, provider
