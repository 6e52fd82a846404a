"""Lost cache: the state dir's caches are deleted while the daemon runs; after a restart
the daemon decides exactly what it decided before, and does nothing it had not done.

The state dir holds the local SCM's own data (``local-scm.sqlite3``: its PRs and
statuses, which are not ours to lose) and caches: every other SQLite file (the webhook
delivery log, any cache) and the git mirrors. Durable state is in git and the SCM: the
health ledger (healthy commits, reverts, holds) is in the notes ref
``refs/notes/promoter.ledger`` of the repository itself, so the restarted daemon must
read back the same healthy-since times and holds, and open or record nothing again.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import Config
from promoter.config.loader import parse_config
from promoter.daemon import ActionEvent, Runtime
from promoter.wiring import Daemon
from scm_plugins.local import LocalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .faults import CI, api_poster
from .history import History

SCM_DATA = "local-scm.sqlite3"
DEV, STAGING_NEXT = ENVIRONMENTS[0], f"{ENVIRONMENTS[1]}-next"


@dataclass(frozen=True)
class Size:
    rounds: int
    """Deletions and restarts, each after a new change has settled."""


SMALL = Size(rounds=2)
LARGE = Size(rounds=6)


def delete_caches(state: Path) -> list[str]:
    """Every SQLite file but the local SCM's (with its -wal and -shm), and the mirrors."""
    deleted = []
    for path in sorted(state.glob("*.sqlite3*")):
        if not path.name.startswith(SCM_DATA):
            path.unlink()
            deleted.append(path.name)
    mirrors = state / "mirrors"
    if mirrors.exists():
        for _ in range(10):  # the running daemon may write into it meanwhile
            shutil.rmtree(mirrors, ignore_errors=True)
            if not mirrors.exists():
                break
        assert not mirrors.exists(), f"cannot delete {mirrors}"
        deleted.append("mirrors/")
    return deleted


def decisions(runtime: Runtime) -> dict[str, Any]:
    """What the daemon reads and decides now, without acting (the clock left out)."""
    snapshot, decision = runtime.reconciler.read_and_decide("guestbook")
    seen: dict[str, Any] = without_source(
        {
            "snapshot": snapshot.model_dump(mode="json", exclude={"now"}),
            "decision": decision.model_dump(mode="json"),
        }
    )
    return seen


def without_source(value: Any) -> Any:
    """``value`` without the statuses' ``source``: where a status was learnt from (the API,
    the daemon's own write, a read from the SCM) is no part of a decision."""
    if isinstance(value, dict):
        status = "phase" in value and "key" in value
        return {k: without_source(v) for k, v in value.items() if not (status and k == "source")}
    if isinstance(value, list):
        items = [without_source(v) for v in value]
        if all(isinstance(v, dict) and "phase" in v and "key" in v for v in items):
            items.sort(key=lambda v: str(v["key"]))  # a cache keeps arrival order, an SCM not
        return items
    return value


def settled(runtime: Runtime, ci: CI) -> dict[str, Any] | None:
    """The decisions once CI and the daemon have nothing left to do, else None."""
    if not ci.caught_up() or not runtime.queue.idle():
        return None
    now = decisions(runtime)
    decision = now["decision"]
    return now if not decision["actions"] and decision["requeue_after"] is None else None


def differences(before: Any, after: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ, one line per leaf: ``path: before != after``."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [
            line
            for key in sorted(before.keys() | after.keys(), key=str)
            for line in differences(before.get(key), after.get(key), f"{path}.{key}")
        ]
    if isinstance(before, list) and isinstance(after, list):
        common = min(len(before), len(after))
        return [
            *(
                line
                for index in range(common)
                for line in differences(before[index], after[index], f"{path}[{index}]")
            ),
            *(f"{path}[{i}]: gone, was {v!r}" for i, v in enumerate(before[common:], common)),
            *(f"{path}[{i}]: new {v!r}" for i, v in enumerate(after[common:], common)),
        ]
    return [] if before == after else [f"{path}: {before!r} != {after!r}"]


def nowhere(sha: str, key: str, phase: str) -> bool:
    """CI's reports while no daemon runs: none gets through."""
    return False


def pull_requests(config: Config) -> list[dict[str, Any]]:
    """Every PR the local SCM holds, as it reports them."""
    scm = LocalScm(provider=config.provider("local"), state_dir=str(config.state_path()))
    try:
        return [pr.model_dump() for pr in scm.pull_requests(repo=config.repository("gitops"))]
    finally:
        scm.close()


def config_text(repo: Path, state: Path) -> str:
    return f"""
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {repo}, scmProvider: local}}]
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - branch: environment/dev
        autoRevert: {{enabled: true, settleTime: 0.5s, autoMerge: true}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod}}
daemon: {{stateDir: {state}, pollInterval: 0.1s, resyncInterval: 1s, workers: 2}}
"""


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(SMALL, id="small"),
        pytest.param(LARGE, marks=[pytest.mark.slow, pytest.mark.timeout(600)], id="large"),
    ],
)
def test_after_losing_its_caches_and_restarting_the_daemon_decides_the_same(
    tmp_path: Path, gitops: GitOpsRepo, size: Size
) -> None:
    """Odd rounds: staging's CI fails on the change, staging and prod wait with open PRs.
    Even rounds: dev's health fails on the change, dev is reverted, the change is held."""
    state = tmp_path / "state"
    config = parse_config(config_text(gitops.path, state))
    history = History(gitops.path)
    unhealthy: set[str] = set()
    failing_ci: set[str] = set()

    def phase(branch: str, sha: str) -> str:
        dry = history.dry_sha(sha)
        if (branch == DEV and dry in unhealthy) or (branch == STAGING_NEXT and dry in failing_ci):
            return "failure"
        return "success"

    ci = CI(gitops.path, ENVIRONMENTS, nowhere, phase=phase)
    for round_ in range(1, size.rounds + 1):
        previous = history.active_dry(DEV)
        change = gitops.change(f"1.{round_}.0", f"Bump guestbook to 1.{round_}.0")
        reverting = round_ % 2 == 0
        (unhealthy if reverting else failing_ci).add(change)
        before_events: list[ActionEvent] = []
        daemon = Daemon(config, observers=[before_events.append])
        runtime = daemon.runtime
        with TestClient(daemon.app) as client:
            ci.post = api_poster(client)
            before = wait_for(partial(settled, runtime, ci), what="the daemon to settle")
            prs, tips = pull_requests(config), {b: history.tip(b) for b in ENVIRONMENTS}
            acted = len(before_events)
            deleted = delete_caches(state)
            runtime.enqueue(["guestbook"])  # the running daemon finds its caches gone
            wait_for(runtime.queue.idle, what="the daemon to finish its work")
        assert before_events[acted:] == [], "acted after its caches were deleted"
        assert "mirrors/" in deleted, deleted
        dev = before["snapshot"]["environments"][0]
        if reverting:
            assert history.runs(DEV, previous), "dev was not reverted"
            assert change in [hold["dry_sha"] for hold in dev["ledger"]["holds"]]
        else:
            assert history.runs(DEV, change)
            states = [v["state"] for v in before["decision"]["environments"]]
            assert states[1:] == ["blocked", "blocked"], states
        print(f"round {round_}: {sorted({e.kind for e in before_events})}; deleted {deleted}")

        after_events: list[ActionEvent] = []
        daemon = Daemon(config, observers=[after_events.append])
        runtime = daemon.runtime
        with TestClient(daemon.app) as client:
            ci.post = api_poster(client)
            after = wait_for(partial(settled, runtime, ci), what="the daemon to settle")
        branch_tips = {b: history.tip(b) for b in ENVIRONMENTS}
        problems = [
            *(f"decided differently: {line}" for line in differences(before, after)),
            *(f"acted again: {event}" for event in after_events),
            *(f"pull requests{line}" for line in differences(prs, pull_requests(config))),
            *(f"branch {line}" for line in differences(tips, branch_tips)),
        ]
        assert not problems, f"round {round_}, after the restart:\n" + "\n".join(problems)
