"""Crash: ``promoter serve`` is killed with SIGKILL at random moments and restarted.

The daemon is a real process (its own process group, killed whole, git children
included, as a container runtime would) on the local SCM. CI reports statuses
through the daemon's API whenever the daemon is up; hydrated changes arrive at
seeded random moments. Afterwards every change has gone through every environment,
no PR was opened twice for one head, and the histories are in order.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from promoter.config.loader import load_config
from promoter.git.process.stale_lock import STALE_AFTER
from promoter.http import free_port
from promoter.wiring import Daemon as InProcessDaemon
from scm_plugins.local import LocalScm
from tests import processes
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

from .faults import CI, api_poster
from .history import (
    History,
    PrRecord,
    completion_problems,
    dry_order_problems,
    pull_request_problems,
)

ACTIONS = ("pull request opened", "pull request updated", "pull request merged", "healthy")


@dataclass(frozen=True)
class Size:
    changes: int
    kills: int
    alive: tuple[float, float]
    """How long (seconds from its start) a daemon lives before it is killed: seeded, uniform."""
    change_every: tuple[float, float]
    timeout: float
    """For the last daemon, which is not killed, to finish the work."""
    targeted: float = 0.3
    """Chance that an action in the log brings the kill forward to within ``TARGETED`` of it:
    a promotion takes a fraction of a second, and a kill at a uniformly random moment
    would mostly find the daemon idle."""


SMALL = Size(changes=4, kills=6, alive=(0.3, 4.0), change_every=(0.5, 3.0), timeout=45.0)
LARGE = Size(changes=15, kills=30, alive=(0.3, 5.0), change_every=(0.5, 4.0), timeout=120.0)


TARGETED = (0.0, 0.08)


def write_config(path: Path, repo: Path, state: Path, port: int) -> Path:
    path.write_text(
        f"""
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {repo}, scmProvider: local}}]
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod}}
daemon:
  stateDir: {state}
  port: {port}
  pollInterval: 0.1s
  resyncInterval: 1s
  workers: 2
"""
    )
    return path


class Daemon:
    """``promoter serve`` in its own process group; every life appends to one log file."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log = config, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.lives = 0
        self._read = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self._read = out.tell()  # what a killed life left half-written is not read
            self.proc = processes.start(
                [sys.executable, "-m", "promoter.cli", "serve", "--config", str(self.config)],
                stdout=out,
                stderr=out,
            )
        self.started_at = time.monotonic()
        self.lives += 1

    def kill(self) -> None:
        assert self.proc is not None
        processes.end(self.proc, term=False)  # SIGKILL, the daemon and all it started

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        finally:
            processes.end(self.proc)

    def alive_for(self) -> float:
        return time.monotonic() - self.started_at

    def warnings(self) -> list[str]:
        """Every distinct warning or error the daemon logged, with how often."""
        seen: Counter[str] = Counter()
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("level") in ("warning", "error"):
                    seen[f"{record['msg']}: {record.get('error', '')}"] += 1
        return [f"{count} x {text}" for text, count in seen.most_common()]

    def new_lines(self) -> list[str]:
        """Log lines written since the last call (a partial last line waits for the next)."""
        with self.log.open("rb") as f:
            f.seek(self._read)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._read += len(complete)
        return complete.decode(errors="replace").splitlines()


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(SMALL, id="small"),
        pytest.param(LARGE, marks=[pytest.mark.slow, pytest.mark.timeout(600)], id="large"),
    ],
)
def test_promotions_complete_in_order_while_the_daemon_is_killed_at_random_moments(
    tmp_path: Path, gitops: GitOpsRepo, seed: int, size: Size
) -> None:
    port = free_port()
    config_path = write_config(tmp_path / "promoter.yaml", gitops.path, tmp_path / "state", port)
    config = load_config(config_path)
    rng, history = random.Random(seed), History(gitops.path)
    daemon = Daemon(config_path, tmp_path / "daemon.log")
    changes: list[str] = []
    kills: list[float] = []
    targeted = 0
    scm = LocalScm(provider=config.provider("local"), state_dir=str(config.state_path()))
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=2.0) as http:
        ci = CI(gitops.path, ENVIRONMENTS, api_poster(http))
        daemon.start()
        try:
            life = rng.uniform(*size.alive)
            next_change = time.monotonic() + rng.uniform(*size.change_every)
            while len(kills) < size.kills or len(changes) < size.changes:
                ci.step()
                if len(changes) < size.changes and time.monotonic() >= next_change:
                    number = len(changes) + 1
                    changes.append(gitops.change(f"1.{number}.0", f"Bump to 1.{number}.0"))
                    next_change = time.monotonic() + rng.uniform(*size.change_every)
                for line in daemon.new_lines():
                    if any(a in line for a in ACTIONS) and rng.random() < size.targeted:
                        life = min(life, daemon.alive_for() + rng.uniform(*TARGETED))
                        targeted += 1
                if daemon.alive_for() >= life:
                    kills.append(round(daemon.alive_for(), 2))
                    daemon.kill()
                    daemon.start()
                    life = rng.uniform(*size.alive)
                time.sleep(0.005)

            def finished() -> bool:
                prs = scm.pull_requests(repo=config.repository("gitops"))
                return not completion_problems(history, ENVIRONMENTS, changes[-1]) and all(
                    pr.state.value != "open" for pr in prs
                )

            try:
                ci.wait_for(finished, timeout=size.timeout, what="the last daemon to finish")
            except AssertionError as exc:
                locks = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.lock"))
                raise AssertionError(
                    f"{exc}\nlock files left: {locks}\nthe daemon's warnings:\n"
                    + "\n".join(daemon.warnings())
                ) from None
        finally:
            code = daemon.stop()
            prs = [PrRecord.of(pr) for pr in scm.pull_requests(repo=config.repository("gitops"))]
            scm.close()
    print(f"killed after {kills} seconds ({targeted} brought forward by an action); {len(prs)} PRs")
    assert dry_order_problems(history, ENVIRONMENTS, "main") == []
    assert pull_request_problems(history, prs, ENVIRONMENTS) == []
    # The local SCM records every merge it made with its SHA, one killed half-way included.
    assert [pr.number for pr in prs if pr.state == "merged" and not pr.merge_sha] == []
    assert code in (0, -signal.SIGTERM), "the last daemon did not stop cleanly"


@pytest.mark.parametrize(
    ("where", "lock", "age"),
    [
        pytest.param("repository", "refs/notes/promoter.ledger.lock", 600, id="ledger-push"),
        pytest.param("repository", "refs/heads/environment/staging.lock", 600, id="local-merge"),
        pytest.param(
            "repository",
            "refs/heads/environment/staging.lock",
            STALE_AFTER - 3,
            id="local-merge-just-killed",
        ),
        pytest.param("mirror", "refs/notes/promoter.ledger.lock", 600, id="ledger-note-in-mirror"),
    ],
)
def test_a_lock_file_left_by_a_killed_git_does_not_stop_promotions(
    tmp_path: Path, gitops: GitOpsRepo, where: str, lock: str, age: float
) -> None:
    """A crash kills the daemon's git children too (a receive-pack of a ledger push, the
    update-ref of a local merge, a ``git notes`` in the mirror); git leaves their lock
    file behind and never removes it. A lock ten minutes old is no live git's; one left
    by a git killed just before the restart (a live git's, for all the daemon can tell)
    holds the merge until it is taken as abandoned (when the retry comes then, and not
    at the backoff's next step, is checked by ``tests/daemon/loop/test_workers.py`` and
    ``tests/unit/test_local_scm_merges.py``). Every kind was seen after a kill in the
    test above."""
    config = local_config(gitops.path, tmp_path / "state", resyncInterval="1s")
    history = History(gitops.path)
    daemon = InProcessDaemon(config)
    runtime = daemon.runtime
    with TestClient(daemon.app):  # a first life creates the mirror
        wait_for(runtime.queue.idle, what="the first life to settle")
    (repository,) = [gitops.path] if where == "repository" else config.state_path().rglob("*.git")
    stale = repository / lock
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("")
    os.utime(stale, (time.time() - age, time.time() - age))

    daemon = InProcessDaemon(config)
    runtime = daemon.runtime
    with TestClient(daemon.app) as client:
        ci = CI(gitops.path, ENVIRONMENTS, api_poster(client))
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        problems = partial(completion_problems, history, ENVIRONMENTS, change)
        try:
            ci.wait_for(lambda: not problems(), timeout=10, what="every environment to run it")
        except AssertionError as exc:
            view = runtime.reconciler.views.get("guestbook")
            error = view.error if view else None
            raise AssertionError(f"{exc}: {problems()}; last error: {error}") from None
