"""Runs the gates that ask other systems (HTTP checks, Argo CD, Flux) when they are due, and
publishes each changed result as a commit status under the gate's key.

An HTTP check judges the proposed commit, and runs only while the environment has
something to promote; Argo CD and Flux judge the running (active) commit, always.
Results are remembered per commit, so a check runs at most once per its ``interval``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import requests

from promoter.config import GateSpec, Repository
from promoter.daemon.checks import Target, argocd_check, flux_check, http_check
from promoter.engine import CommitState, EnvironmentSnapshot, Snapshot, is_no_op
from promoter.models import CommitStatus, utcnow
from promoter.state import StatusCache
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.probes")

PROBE_KINDS = frozenset({"http", "argocd", "flux"})
REMEMBERED = 10_000
"""Commits whose last check time is kept; older ones are simply checked again."""


def kubernetes_custom_objects() -> Any:
    """A ``CustomObjectsApi`` from the in-cluster config, else the local kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config()  # type: ignore[no-untyped-call]
    return client.CustomObjectsApi()


@dataclass
class ProbeRun:
    changed: bool = False
    next_in: float | None = None

    def due_in(self, seconds: float) -> None:
        self.next_in = seconds if self.next_in is None else min(self.next_in, seconds)


class Probes:
    def __init__(
        self,
        *,
        session: requests.Session | None = None,
        custom_objects: Callable[[], Any] = kubernetes_custom_objects,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._session = session or requests.Session()
        self._custom_objects_factory = custom_objects
        self._custom_objects: Any = None
        self._clock = clock
        self._checked: dict[tuple[str, str, str], datetime] = {}
        self._lock = threading.Lock()

    def run(
        self, snapshot: Snapshot, repo: Repository, plugin: ScmPlugin, cache: StatusCache
    ) -> ProbeRun:
        """Check what is due; publish what changed; say when the next check is due."""
        run = ProbeRun()
        for env in snapshot.environments:
            for gate in env.gates:
                if gate.kind not in PROBE_KINDS:
                    continue
                commit = env.active if gate.active else env.proposed
                if commit is None or commit.dry_sha is None:
                    continue
                if not gate.active and not _has_change(snapshot, env):
                    continue
                self._one(snapshot, env, gate, commit, repo, plugin, cache, run)
        return run

    def _one(
        self,
        snapshot: Snapshot,
        env: EnvironmentSnapshot,
        gate: GateSpec,
        commit: CommitState,
        repo: Repository,
        plugin: ScmPlugin,
        cache: StatusCache,
        run: ProbeRun,
    ) -> None:
        interval = _interval(gate)
        key = (snapshot.strategy, gate.key, commit.hydrated_sha)
        now = self._clock()
        with self._lock:
            last = self._checked.get(key)
        if last is not None and (now - last).total_seconds() < interval:
            run.due_in(interval - (now - last).total_seconds())
            return
        assert commit.dry_sha is not None
        target = Target(snapshot.strategy, env.branch, commit.hydrated_sha, commit.dry_sha)
        result = self._check(gate, target)
        with self._lock:
            if len(self._checked) >= REMEMBERED:
                self._checked.clear()
            self._checked[key] = now
        run.due_in(interval)
        existing = commit.status(gate.key)
        if existing is not None and (existing.phase, existing.description) == (
            result.phase,
            result.description,
        ):
            return
        plugin.set_commit_status(repo=repo, sha=commit.hydrated_sha, status=result)
        cache.put(repo.name, commit.hydrated_sha, result)
        run.changed = True
        log.info(
            "gate checked",
            extra={
                "strategy": snapshot.strategy,
                "environment": env.branch,
                "gate": gate.key,
                "sha": commit.hydrated_sha,
                "phase": result.phase.value,
            },
        )

    def _check(self, gate: GateSpec, target: Target) -> CommitStatus:
        if gate.http is not None:
            return http_check(gate.key, gate.http, target, self._session)
        if gate.argocd is not None:
            return argocd_check(gate.key, gate.argocd, target, self._session)
        assert gate.flux is not None
        if self._custom_objects is None:
            self._custom_objects = self._custom_objects_factory()
        return flux_check(gate.key, gate.flux, target, self._custom_objects)


def _interval(gate: GateSpec) -> float:
    spec = gate.http or gate.argocd or gate.flux
    assert spec is not None
    return float(spec.interval)


def _has_change(snapshot: Snapshot, env: EnvironmentSnapshot) -> bool:
    """Whether the environment has something to promote (a proposed gate matters then)."""
    if env.active is None or env.proposed is None:
        return False
    return env.proposed.dry_sha != env.active.dry_sha and not is_no_op(snapshot, env)
