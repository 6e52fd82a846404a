"""Runs the gates that ask other systems (HTTP checks, Argo CD, Flux) in the background,
outside every strategy's reconcile, and publishes each changed result as a commit status
under the gate's key.

A reconcile only reads the results (they are commit statuses, like any other gate's) and
calls ``plan``, which hands the checks that are due to a bounded pool of threads and says
when the next one is due. A pool thread starts a check and is free at once: the backend's
answer (or its deadline) hands the rest back to the pool, so hanging backends, however
many, never hold the pool's threads. A check runs through ``GateCalls`` (its deadline, its
backend's bound); a result that changed is published through the SCM plugin (a call
bounded the same way), put in the status cache, and its strategy is woken. So a slow
backend delays only the gates that use it, by at most their timeout, and never a
reconcile. An HTTP check judges the proposed commit, only while the environment has
something to promote; Argo CD and Flux judge the running commit, always. A check runs at
most once per its ``interval`` per commit; one whose backend gave no usable answer is
asked again after its interval doubled for each such answer in a row, up to
``max_backoff``.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import requests

from promoter.config import GateSpec, Repository
from promoter.daemon.checks.backends import Target, argocd_check, backend_of, http_check
from promoter.daemon.checks.flux import KubeClient, flux_check, kubernetes_custom_objects
from promoter.daemon.checks.gate_calls import GateCalls, Judged, pending, words_of
from promoter.daemon.checks.lanes import Lane
from promoter.engine import CommitState, EnvironmentSnapshot, Snapshot, is_no_op
from promoter.models import CommitStatus
from promoter.state import StatusCache
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.probes")

PROBE_KINDS = frozenset({"http", "argocd", "flux"})
REMEMBERED = 10_000
"""Gates on commits whose last check is kept; older ones are simply checked again."""
PUBLISH_TIMEOUT = 1.0
"""Least time given to publishing a result on the SCM (else the gate's timeout)."""

Wake = Callable[[str, float], None]
"""Run strategy ``key`` again after ``delay`` seconds (0: now)."""


@dataclass
class _Gate:
    """One gate on one commit: its last check, failures in a row, what was published."""

    running: bool = False
    due: float = 0.0
    failures: int = 0
    published: tuple[str, str] | None = None


@dataclass(frozen=True)
class _Job:
    ident: tuple[str, str, str]
    gate: GateSpec
    target: Target
    repo: Repository
    plugin: ScmPlugin
    cache: StatusCache
    existing: CommitStatus | None


class Probes:
    def __init__(
        self,
        *,
        calls: GateCalls | None = None,
        workers: int = 8,
        wake: Wake = lambda key, delay: None,
        max_backoff: float = 300.0,
        session: requests.Session | None = None,
        custom_objects: Callable[[], Any] = kubernetes_custom_objects,
    ) -> None:
        self.calls = calls or GateCalls()
        self.wake = wake
        self.max_backoff = max_backoff
        self._session = session or requests.Session()
        self._kube = KubeClient(custom_objects)
        self._pool = Lane("promoter-gate", workers)
        self._lock = threading.Lock()
        self._gates: dict[tuple[str, str, str], _Gate] = {}

    def plan(
        self, snapshot: Snapshot, repo: Repository, plugin: ScmPlugin, cache: StatusCache
    ) -> float | None:
        """Start the checks that are due (in the background); seconds until the next is due.

        A check in flight wakes its strategy when it ends; nothing here waits on it.
        """
        next_in: float | None = None
        now = time.monotonic()
        for env in snapshot.environments:
            for gate in env.gates:
                commit = _judged_commit(snapshot, env, gate)
                if commit is None:
                    continue
                ident = (snapshot.strategy, gate.key, commit.hydrated_sha)
                with self._lock:
                    state = self._state(ident)
                    if state.running:
                        continue
                    if state.due > now:
                        wait = state.due - now
                        next_in = wait if next_in is None else min(next_in, wait)
                        continue
                    state.running = True
                assert commit.dry_sha is not None
                target = Target(snapshot.strategy, env.branch, commit.hydrated_sha, commit.dry_sha)
                job = _Job(ident, gate, target, repo, plugin, cache, commit.status(gate.key))
                self._pool.submit(functools.partial(contextvars.copy_context().run, self._run, job))
        return next_in

    def _state(self, ident: tuple[str, str, str]) -> _Gate:
        state = self._gates.get(ident)
        if state is None:
            if len(self._gates) >= REMEMBERED:
                self._gates = {k: v for k, v in self._gates.items() if v.running}
            state = self._gates[ident] = _Gate()
        return state

    def _run(self, job: _Job) -> None:
        """One check started: the pool's thread does not wait for its answer, which comes
        back to the pool (``_finish``) when the backend answers or its deadline passes."""
        try:
            verdict = self._judging(job.gate, job.target)
        except Exception:
            log.exception("gate check crashed", extra={"gate": job.gate.key})
            self._finish(job, None)
            return
        context = contextvars.copy_context()

        def answered(done: Future[Judged]) -> None:
            self._pool.submit(functools.partial(context.run, self._finish, job, done.result()))

        verdict.add_done_callback(answered)

    def _finish(self, job: _Job, judged: Judged | None) -> None:
        """A check's verdict published if it changed, and its strategy woken."""
        changed, trouble = False, True
        try:
            if judged is None:
                raise RuntimeError("the check did not start")
            changed, published = self._publish(job, judged.status)
            trouble = judged.trouble or not published
        except Exception:  # never lose the gate: it is planned again after its backoff
            log.exception("gate check crashed", extra={"gate": job.gate.key})
        interval = _interval(job.gate)
        with self._lock:
            state = self._state(job.ident)
            state.running = False
            state.failures = state.failures + 1 if trouble else 0
            wait = interval * 2 ** max(state.failures - 1, 0)
            wait = min(wait, max(interval, self.max_backoff))
            state.due = time.monotonic() + wait
        self.wake(job.target.strategy, 0.0 if changed else wait)

    def check(self, gate: GateSpec, target: Target) -> Judged:
        """The gate's verdict on ``target`` through the contract; never raises."""
        return self._judging(gate, target).result()

    def _judging(self, gate: GateSpec, target: Target) -> Future[Judged]:
        """The gate's verdict on ``target``, to come (by the check's deadline)."""
        backend, what = backend_of(gate)
        spec = gate.http or gate.argocd or gate.flux
        assert spec is not None
        url = gate.http.url if gate.http is not None else ""

        def ask() -> CommitStatus:
            if gate.http is not None:
                return http_check(gate.key, gate.http, target, self._session)
            if gate.argocd is not None:
                return argocd_check(gate.key, gate.argocd, target, self._session)
            assert gate.flux is not None
            return flux_check(gate.key, gate.flux, target, self._kube)

        return self.calls.judging(
            key=gate.key, what=what, backend=backend, timeout=spec.timeout, check=ask, url=url
        )

    def _publish(self, job: _Job, result: CommitStatus) -> tuple[bool, bool]:
        """``(changed, published)``: a result that changed is set on the SCM; one the SCM
        did not take is shown pending with why, so that nothing merges on it."""
        said = (result.phase.value, result.description)
        with self._lock:
            last = self._state(job.ident).published
        if last is None and job.existing is not None:
            last = (job.existing.phase.value, job.existing.description)
        if last == said:
            return False, True
        sha, spec = job.target.sha, job.gate.http or job.gate.argocd or job.gate.flux
        assert spec is not None
        try:
            self.calls.call(
                f"scm {job.repo.scm_provider}",
                lambda: job.plugin.set_commit_status(repo=job.repo, sha=sha, status=result),
                timeout=max(spec.timeout, PUBLISH_TIMEOUT),
            )
        except Exception as exc:
            words = words_of(exc)
            log.warning(
                "gate result not published",
                extra={"gate": job.gate.key, "sha": sha, "error": words},
            )
            shown = f"not on the SCM ({words}): {result.description}"
            job.cache.put(job.repo.name, sha, pending(job.gate.key, shown, result.url))
            return True, False
        job.cache.wrote(job.repo.name, sha, result)
        with self._lock:
            self._state(job.ident).published = said
        log.info(
            "gate checked",
            extra={
                "strategy": job.target.strategy,
                "environment": job.target.environment,
                "gate": job.gate.key,
                "sha": sha,
                "phase": result.phase.value,
            },
        )
        return True, True

    def close(self) -> None:
        """Stop taking checks; those in flight end on their own (their deadlines)."""
        self._pool.close()
        self.calls.close()


def _judged_commit(
    snapshot: Snapshot, env: EnvironmentSnapshot, gate: GateSpec
) -> CommitState | None:
    """The commit a gate judges now, or None when it has nothing to judge."""
    if gate.kind not in PROBE_KINDS:
        return None
    commit = env.active if gate.active else env.proposed
    if commit is None or commit.dry_sha is None:
        return None
    if not gate.active and not _has_change(snapshot, env):
        return None
    return commit


def _interval(gate: GateSpec) -> float:
    spec = gate.http or gate.argocd or gate.flux
    assert spec is not None
    return float(spec.interval)


def _has_change(snapshot: Snapshot, env: EnvironmentSnapshot) -> bool:
    """Whether the environment has something to promote (a proposed gate matters then)."""
    if env.active is None or env.proposed is None:
        return False
    return env.proposed.dry_sha != env.active.dry_sha and not is_no_op(snapshot, env)
