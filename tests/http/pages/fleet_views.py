"""A fleet for the browser tests: a real daemon reconciles a strategy of four environments
on the sandbox's repository once (a change waiting for CI); its view is then served as the
views of ``count`` strategies, in five states (as read, failing, paused, up to date,
error), over a dozen repositories and seven labels, their changes waiting since different
times, through the real ``Api``, dashboard and app on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from promoter.config import PromotionStrategy
from promoter.daemon import StrategyView
from promoter.engine import EnvState
from promoter.http import AccessControl, Api, ThreadServer, build_app, free_port
from promoter.models import DryCommit, Phase
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

STATES = ("waiting", "failing", "paused", "up-to-date", "error")
"""The kind of dev in each variant, in order: strategy ``i`` is variant ``i % 5``."""
FOUR = [*ENVIRONMENTS[:2], "environment/prod-eu", "environment/prod-us"]
"""The fleet's environments: four, two of them with longer names."""
STRATEGY = (
    "  - name: fleet\n    repository: gitops\n    activeCommitStatuses: [{key: health}]\n"
    "    proposedCommitStatuses: [{key: ci}]\n    environments:\n"
) + "".join(f"      - {{branch: {branch}}}\n" for branch in FOUR)
AGES = 13
"""Distinct ages of the waiting change: strategy ``i``'s change is ``i % 13`` hours older."""


class FleetViews:
    """``Views`` of ``count`` strategies, each one of a few real views."""

    def __init__(self, base: PromotionStrategy, views: list[list[StrategyView]], count: int):
        self.list = [
            base.model_copy(
                update={
                    "name": f"app-{(i * 7919) % count:05d}",
                    "repository": f"repo-{i % 12:02d}",
                    "labels": [f"team-{i % 7}"],
                }
            )
            for i in range(count)
        ]
        self.by_name = {s.name: s for s in self.list}
        self.views = {s.name: views[i % len(STATES)][i % AGES] for i, s in enumerate(self.list)}
        self.states = {s.name: STATES[i % len(STATES)] for i, s in enumerate(self.list)}
        """The kind of dev in each strategy."""
        self.started = True

    def strategies(self) -> list[PromotionStrategy]:
        return self.list

    def strategy(self, name: str) -> PromotionStrategy | None:
        return self.by_name.get(name)

    def view(self, name: str) -> StrategyView | None:
        return self.views.get(name)

    def owner(self, name: str) -> str | None:
        return None

    def has_repository(self, name: str) -> bool:
        return False

    def readiness(self) -> tuple[bool, dict[str, str]]:
        return True, {}

    def dry_history(self, name: str, *, limit: int) -> list[DryCommit]:
        return []

    def parked(self) -> dict[str, str]:
        return {}

    def scm_web(self, repo_name: str) -> tuple[str, str]:
        return "", ""

    def changed_files(self, name: str, environment: str) -> list[tuple[str, str]]:
        return []


def variants(view: StrategyView) -> list[StrategyView]:
    """The view as read (dev waiting for CI), and as if dev's CI failed, dev was paused,
    everything was up to date, or the last reconcile failed (``STATES``)."""
    assert view.decision is not None and view.snapshot is not None
    first = view.decision.environments[0]
    gate = first.gates[0].model_copy(update={"phase": Phase.FAILURE})
    failing = replace(first, gates=(gate, *first.gates[1:]))
    envs = view.snapshot.environments
    paused = replace(envs[0], ledger=envs[0].ledger.model_copy(update={"paused": "health failed"}))
    done = [replace(v, state=EnvState.UP_TO_DATE) for v in view.decision.environments]
    decision = view.decision
    return [
        view,
        replace(
            view,
            decision=replace(decision, environments=(failing, *decision.environments[1:])),
        ),
        replace(view, snapshot=replace(view.snapshot, environments=(paused, *envs[1:]))),
        replace(view, decision=replace(decision, environments=tuple(done))),
        replace(view, error="the SCM answered 502 Bad Gateway"),
    ]


def aged(view: StrategyView, hours: int) -> StrategyView:
    """The view with its waiting change ``hours`` older."""
    assert view.snapshot is not None
    envs = [
        replace(
            env,
            changelog=tuple(
                c.model_copy(update={"date": c.date - timedelta(hours=hours)})
                for c in env.changelog
                if c.date is not None
            ),
        )
        for env in view.snapshot.environments
    ]
    return replace(view, snapshot=replace(view.snapshot, environments=tuple(envs)))


@dataclass
class Fleet:
    url: str
    views: FleetViews


@contextmanager
def serve_fleet(tmp_path: Path, count: int) -> Iterator[Fleet]:
    """The fleet of ``count`` strategies served on 127.0.0.1 (this machine's local admin)."""
    gitops = GitOpsRepo.create(tmp_path, [*ENVIRONMENTS, *FOUR[2:]])
    config = local_config(gitops.path, tmp_path / "state", extra_strategy=STRATEGY)
    runtime = Daemon(config).runtime
    runtime.start()
    try:
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        runtime.enqueue(["fleet"])

        def waiting() -> StrategyView | None:
            view = runtime.view("fleet")
            if view is None or view.decision is None or view.snapshot is None:
                return None
            return view if view.snapshot.environments[0].changelog else None

        view = wait_for(waiting, timeout=60, what="dev waiting for CI on 1.1.0")
        shapes = [[aged(v, hours) for hours in range(AGES)] for v in variants(view)]
        base = next(s for s in config.promotion_strategies if s.name == "fleet")
        views = FleetViews(base, shapes, count)
        api = Api(views=views, commands=runtime, access=AccessControl.from_config(config))
        app = build_app(api, start=lambda: None, stop=lambda: None)
        port = free_port()
        server = ThreadServer(app, port).start()
        try:
            yield Fleet(f"http://127.0.0.1:{port}", views)
        finally:
            server.stop()
    finally:
        runtime.stop()
