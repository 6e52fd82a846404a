"""A daemon with strategies whose gate backends misbehave and a calm one, for the fault suite.

Each faulty strategy (``Faulty``) runs dev then staging on a repository of its own, with
the gate a test module gives it (an HTTP check, Argo CD, Flux, an approval, a check
published through a plugin). The ``calm`` strategy, on another repository and the local
SCM, has one environment gated by ``ci`` only. ``usual`` holds each strategy's
gate-to-merge latency into dev, measured before any backend misbehaves: what "its usual
speed" means (a strategy on GitHub is slower than one on the local SCM).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.cli.sandbox import GitOpsRepo
from promoter.config.loader import parse_config
from promoter.models import CommitStatus
from promoter.wiring import Daemon
from tests.support import wait_for

DEV, STAGING = "environment/dev", "environment/staging"
TIMEOUT = "0.3s"
"""Every gate's timeout in the fault suite."""
CHECKS_POLL = 0.25
"""Seconds between two reads of a commit's checks on the SCM, while waiting for words."""

_versions = itertools.count(2)


@dataclass(frozen=True)
class Faulty:
    """A strategy (and its repository, of the same name) with a misbehaving gate:
    ``dev`` and ``staging`` are YAML added to its environments."""

    name: str
    dev: str = ""
    staging: str = ""
    provider: str = "local"
    repository: str = ""
    """YAML added to its repository (``path``, ``pollInterval``)."""
    readable: bool = True
    """Whether its SCM can be read at all (a TLS error of the whole SCM cannot)."""


def config_text(root: Path, faulty: Sequence[Faulty], providers: str = "") -> str:
    """promoter.yaml of the calm strategy and the ``faulty`` ones; ``providers`` is YAML
    of more SCM providers."""
    repositories = "".join(
        f"""
  - name: {f.name}
    url: {root / f.name / "gitops.git"}
    scmProvider: {f.provider}{f"{chr(10)}    {f.repository}" if f.repository else ""}"""
        for f in faulty
    )
    strategies = "".join(
        f"""
  - name: {f.name}
    repository: {f.name}
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: {DEV}{", " + f.dev if f.dev else ""}}}
      - {{branch: {STAGING}{", " + f.staging if f.staging else ""}}}"""
        for f in faulty
    )
    return f"""
scmProviders:
  - name: local
    local: {{}}
{providers}
repositories:
  - name: calm
    url: {root / "calm" / "gitops.git"}
    scmProvider: local{repositories}
promotionStrategies:
  - name: calm
    repository: calm
    proposedCommitStatuses: [{{key: ci}}]
    environments: [{{branch: {DEV}}}]{strategies}
daemon:
  stateDir: {root / "state"}
  pollInterval: 0.05s
  resyncInterval: 30s
  maxBackoff: 2s
  workers: 2
"""


@dataclass
class Faulted:
    client: TestClient
    daemon: Daemon
    repos: dict[str, GitOpsRepo]
    usual: dict[str, float] = field(default_factory=dict)

    def view(self, strategy: str, branch: str) -> dict[str, Any]:
        answer = self.client.get(f"/api/v1/strategies/{strategy}")
        assert answer.status_code == 200, answer.text
        return next(e for e in answer.json()["environments"] if e["branch"] == branch)

    def set_status(self, repository: str, sha: str, key: str) -> None:
        """As CI does: again while the SCM refuses it (a plugin that just died)."""

        def posted() -> bool:
            answer = self.client.post(
                f"/api/v1/repositories/{repository}/commits/{sha}/statuses",
                json={"key": key, "phase": "success"},
            )
            assert answer.status_code in (201, 502, 503), answer.text
            return answer.status_code == 201

        wait_for(posted, what=f"{key} set on {sha}")

    def active_dry(self, strategy: str, branch: str) -> str | None:
        return (self.view(strategy, branch).get("active") or {}).get("drySha")

    def checks(self, strategy: str, sha: str) -> dict[str, CommitStatus]:
        """The statuses of ``sha`` as the strategy's SCM holds them: its PR checks."""
        runtime = self.daemon.runtime
        repo = runtime.config.repository(strategy)
        plugin = runtime.plugins[repo.scm_provider]
        return {s.key: s for s in plugin.get_commit_statuses(repo=repo, sha=sha)}

    def promote_dev(self, strategy: str) -> tuple[str, float]:
        """A new change of ``strategy`` merged into dev: (its dry SHA, gate-to-merge seconds)."""
        branches = [DEV] if strategy == "calm" else [DEV, STAGING]
        change = self.repos[strategy].change(f"1.{next(_versions)}.0", "Bump", branches)

        def proposed() -> dict[str, Any] | None:
            env = self.view(strategy, DEV)
            return env if (env.get("proposed") or {}).get("drySha") == change else None

        head = wait_for(proposed, what=f"{strategy}'s dev PR")["proposed"]["hydratedSha"]
        started = time.monotonic()
        self.set_status(strategy, head, "ci")
        wait_for(lambda: self.active_dry(strategy, DEV) == change, what=f"{strategy} dev merged")
        return change, time.monotonic() - started

    def assert_usual_speed(self, strategy: str) -> tuple[str, float]:
        """A change of ``strategy`` reaches dev while the other backends misbehave, within
        ``promote_dev``'s deadline: nothing it waits on hangs with them. How fast, against
        its usual latency, is a figure of ``bench/gate_faults.py``: on a machine loaded
        with other work any bound on it fails at random."""
        change, took = self.promote_dev(strategy)
        print(f"{strategy}: gate to merge {took:.2f}s, usually {self.usual[strategy]:.2f}s")
        return change, took

    def stuck_in_staging(self, strategy: str, change: str) -> dict[str, Any]:
        """Staging of ``strategy`` does not run ``change``; its view."""
        staging = self.view(strategy, STAGING)
        assert staging["active"]["drySha"] != change
        assert staging["state"] != "up-to-date"
        return staging


@contextmanager
def faulted(
    root: Path,
    faulty: Sequence[Faulty],
    providers: str = "",
    *,
    usual: dict[str, float] | None = None,
    created: Callable[[dict[str, GitOpsRepo]], None] = lambda repos: None,
) -> Iterator[Faulted]:
    """The daemon, up, with the calm strategy's usual gate-to-merge latency measured (or
    ``usual``, measured by another daemon of the same shape). ``created`` is told the
    repositories before the daemon starts."""
    repos = {"calm": GitOpsRepo.create(root / "calm", [DEV])}
    for f in faulty:
        repos[f.name] = GitOpsRepo.create(root / f.name, [DEV, STAGING])
    created(repos)
    daemon = Daemon(parse_config(config_text(root, faulty, providers)))
    with TestClient(daemon.app, base_url="http://127.0.0.1") as client:
        world = Faulted(client, daemon, repos)
        readable = ["calm", *(f.name for f in faulty if f.readable)]
        for strategy in readable:
            wait_for(
                lambda s=strategy: world.view(s, DEV).get("state") == "up-to-date",
                what=f"{strategy} read",
            )
        if usual is None:
            calm = statistics.median(world.promote_dev("calm")[1] for _ in range(3))
            usual = {"calm": calm}
            for strategy in readable[1:]:  # one look each; never below the calm one's
                usual[strategy] = max(world.promote_dev(strategy)[1], calm)
        world.usual = usual
        yield world


def said(status: CommitStatus | None, words: Sequence[str]) -> bool:
    """Whether ``status`` is pending and its description holds one of ``words``."""
    return (
        status is not None
        and status.phase.value == "pending"
        and any(w in status.description for w in words)
    )


def reason_says(world: Faulted, strategy: str, branch: str, words: Sequence[str]) -> str:
    """The environment's reason in the API, once it holds one of ``words``."""

    def says() -> str | None:
        reason = str(world.view(strategy, branch)["reason"])
        return reason if any(w in reason for w in words) else None

    return wait_for(says, what=f"{strategy} {branch}'s reason to say {words}")


def staging_pr(world: Faulted, strategy: str, change: str) -> str:
    """The head of staging's PR once it proposes ``change``, with its ci passed."""

    def proposed() -> dict[str, Any] | None:
        env = world.view(strategy, STAGING)
        return env if env.get("pullRequest") and env["proposed"]["drySha"] == change else None

    head = str(wait_for(proposed, what=f"{strategy}'s staging PR")["proposed"]["hydratedSha"])
    world.set_status(strategy, head, "ci")
    return head


def check_says(world: Faulted, strategy: str, sha: str, key: str, words: Sequence[str]) -> str:
    """The description of check ``key`` on ``sha`` (on the SCM), once pending with ``words``."""

    last: list[CommitStatus | None] = [None]

    def says() -> CommitStatus | None:
        status = last[0] = world.checks(strategy, sha).get(key)
        return status if said(status, words) else None

    # Read through the daemon's own plugin, so within its credential's rate budget: at a
    # person's pace, not fifty times a second (304s are quick; GitHub's points are not).
    try:
        return wait_for(says, what=f"{key} to say {words}", poll=CHECKS_POLL).description
    except AssertionError as exc:
        status = last[0]
        seen = f"{status.phase.value}: {status.description}" if status else "no such check"
        raise AssertionError(f"{exc}; it says {seen}") from None


def blocked_alone(world: Faulted, strategy: str, key: str, words: Sequence[str]) -> str:
    """For a gate ``key`` of staging: a change passes dev as usual, then waits in staging
    with the backend's ``words`` in the check and the API's reason, while the calm
    strategy merges as usual. The check's description."""
    change, _ = world.assert_usual_speed(strategy)
    head = staging_pr(world, strategy, change)
    description = check_says(world, strategy, head, key, words)
    reason = reason_says(world, strategy, STAGING, words)
    assert key.removeprefix("promoter/") in reason
    world.assert_usual_speed("calm")
    world.stuck_in_staging(strategy, change)
    return description


def blocked_behind(world: Faulted, strategy: str, key: str, words: Sequence[str]) -> str:
    """For a health gate ``key`` of dev (Argo CD, Flux): a change passes dev as usual; the
    check on the commit dev runs says the backend's ``words``, and so does staging's
    reason; staging does not merge, and the calm strategy merges as usual. The check's
    description."""
    change, _ = world.assert_usual_speed(strategy)
    running = str(world.view(strategy, DEV)["active"]["hydratedSha"])
    description = check_says(world, strategy, running, key, words)
    staging_pr(world, strategy, change)
    reason = reason_says(world, strategy, STAGING, words)
    assert key.removeprefix("promoter/") in reason
    world.assert_usual_speed("calm")
    world.stuck_in_staging(strategy, change)
    return description
