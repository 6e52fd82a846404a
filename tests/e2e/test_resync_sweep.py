"""The periodic resync at scale: quiet strategies are skipped, and re-read in turn.

The daemon runs on the local SCM with ref polling off: statuses posted through the API
are what it hears (its webhooks); the resync alone learns what changed behind its back.
``settledRecheck`` is three resync intervals: a settled commit is read again within
three resyncs (and the interval its share of the sweep is spread over), never later.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.daemon import Runtime
from promoter.metrics import sample
from promoter.models import CommitStatus, Phase
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

ROUNDS = 3
PROD = ENVIRONMENTS[-1]


def status_reads() -> float:
    labels = {"provider": "local", "operation": "get_commit_statuses", "outcome": "success"}
    return sample("promoter_scm_calls_total", labels)


def quiet(runtime: Runtime) -> bool:
    seen = runtime.settled.get("guestbook")
    return runtime.queue.idle() and not runtime.queue.waiting() and bool(seen and seen.quiet)


def resync(runtime: Runtime) -> None:
    """A periodic resync, and the share of the sweep it spreads over the next interval
    run at once (as if that interval had passed)."""
    runtime.scheduler.resync()
    assert runtime.resync.last is not None
    runtime.queue.add_many(runtime.resync.last.swept)
    wait_for(runtime.queue.idle, what="an idle queue")


def until_turn(runtime: Runtime) -> int:
    """Resyncs before the one whose sweep turn is the strategy's (at most ROUNDS - 1)."""
    assert runtime.resync.rounds == ROUNDS
    return (runtime.resync.turn_of("guestbook") - runtime.resync.done) % ROUNDS


def health(runtime: Runtime, branch: str) -> Phase | None:
    view = runtime.view("guestbook")
    assert view is not None and view.snapshot is not None
    env = next(e for e in view.snapshot.environments if e.branch == branch)
    assert env.active is not None
    return next((s.phase for s in env.active.statuses if s.key == "health"), None)


@pytest.fixture
def runtime(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Runtime]:
    config = local_config(
        gitops.path,
        tmp_path / "state",
        pollInterval=0,
        resyncInterval="5m",
        settledRecheck=f"{5 * ROUNDS}m",
    )
    daemon = Daemon(config)
    with TestClient(daemon.app) as client:
        runtime = daemon.runtime
        for branch in ENVIRONMENTS:
            response = client.post(
                f"/api/v1/repositories/gitops/commits/{gitops.tip(branch)}/statuses",
                json={"key": "health", "phase": "success"},
            )
            assert response.status_code == 201, response.text
        wait_for(lambda: quiet(runtime), what="a quiet strategy")
        yield runtime


def test_an_idle_resync_reads_no_status_of_a_settled_commit_outside_its_turn(
    runtime: Runtime,
) -> None:
    reads = status_reads()
    for _ in range(until_turn(runtime)):
        resync(runtime)
    assert status_reads() == reads
    runtime.scheduler.resync()  # the strategy's turn in the sweep: spread, not at once
    wait_for(runtime.queue.idle, what="an idle queue")
    assert status_reads() == reads
    assert runtime.queue.waiting() == 1
    assert runtime.resync.last is not None and runtime.resync.last.swept == ["guestbook"]
    runtime.queue.add_many(runtime.resync.last.swept)  # as if the interval had passed
    wait_for(runtime.queue.idle, what="an idle queue")
    assert status_reads() == reads + len(ENVIRONMENTS)


def test_a_lost_status_of_a_settled_commit_is_healed_within_the_settled_recheck(
    runtime: Runtime, gitops: GitOpsRepo
) -> None:
    plugin: Any = runtime.plugins["local"]
    failed = CommitStatus(key="health", phase=Phase.FAILURE, source="cd")
    repo = runtime.config.repository("gitops")
    plugin.set_commit_status(repo=repo, sha=gitops.tip(PROD), status=failed)  # no webhook
    for _ in range(until_turn(runtime)):
        resync(runtime)
        assert health(runtime, PROD) is Phase.SUCCESS
    resync(runtime)
    assert health(runtime, PROD) is Phase.FAILURE
    assert not quiet(runtime)


def test_a_push_whose_webhook_was_lost_reaches_a_quiet_strategy_at_the_next_resync(
    runtime: Runtime, gitops: GitOpsRepo
) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0", [ENVIRONMENTS[0]])
    resync(runtime)
    view = runtime.view("guestbook")
    assert view is not None and view.snapshot is not None
    dev = view.snapshot.environments[0]
    assert dev.proposed is not None and dev.proposed.dry_sha == change
    assert dev.pull_request is not None


def test_while_webhooks_are_silent_a_strategy_that_waits_is_read_at_every_resync(
    runtime: Runtime, gitops: GitOpsRepo
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0", [ENVIRONMENTS[0]])
    resync(runtime)  # dev now waits for its ci gate
    runtime.resync.heard_at.clear()  # nothing heard for a resync interval
    plugin: Any = runtime.plugins["local"]
    view = runtime.view("guestbook")
    assert view is not None and view.snapshot is not None
    proposed = view.snapshot.environments[0].proposed
    assert proposed is not None
    green = CommitStatus(key="ci", phase=Phase.SUCCESS, source="ci")
    repo = runtime.config.repository("gitops")
    plugin.set_commit_status(repo=repo, sha=proposed.hydrated_sha, status=green)  # no webhook
    runtime.scheduler.resync()  # the first strategy that waits is read at once
    assert runtime.resync.last is not None and runtime.resync.last.spread == ["guestbook"]
    wait_for(
        lambda: (
            (v := runtime.view("guestbook")) is not None
            and v.snapshot is not None
            and (a := v.snapshot.environments[0].active) is not None
            and a.dry_sha == proposed.dry_sha
        ),
        what="dev promoted after one resync",
    )


def test_a_healthy_record_is_shown_at_once_without_a_second_reconcile(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state", pollInterval=0, resyncInterval="5m")
    daemon = Daemon(config)
    with TestClient(daemon.app) as client:
        runtime = daemon.runtime
        wait_for(lambda: runtime.queue.idle() and runtime.view("guestbook"), what="a first view")
        for branch in ENVIRONMENTS:
            reconciles = sample("promoter_reconcile_total", {"result": "success"})
            response = client.post(
                f"/api/v1/repositories/gitops/commits/{gitops.tip(branch)}/statuses",
                json={"key": "health", "phase": "success"},
            )
            assert response.status_code == 201, response.text

            def recorded(branch: str = branch) -> bool:
                view = runtime.view("guestbook")
                assert view is not None and view.snapshot is not None
                env = next(e for e in view.snapshot.environments if e.branch == branch)
                return env.ledger.last_healthy is not None and runtime.queue.idle()

            wait_for(recorded, what=f"{branch} recorded healthy")
            assert sample("promoter_reconcile_total", {"result": "success"}) == reconciles + 1


def test_while_webhooks_flow_a_strategy_that_waits_is_read_in_its_turn(
    runtime: Runtime, gitops: GitOpsRepo
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0", [ENVIRONMENTS[0]])
    resync(runtime)  # dev now waits for its ci gate
    view = runtime.view("guestbook")
    assert view is not None and view.snapshot is not None
    proposed = view.snapshot.environments[0].proposed
    assert proposed is not None
    runtime.resync.heard(["gitops"])  # a webhook about the repository just arrived
    reads = status_reads()
    if until_turn(runtime) == 0:
        resync(runtime)  # its turn: read; the next ones are not
        reads = status_reads()
    for _ in range(until_turn(runtime)):
        resync(runtime)
        assert status_reads() == reads  # not its turn
    resync(runtime)
    assert status_reads() > reads
