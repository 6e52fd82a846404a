"""Every line of a reconcile carries its strategy and reconcile id, down to the SCM layer's,
on the worker thread that runs it; nothing of one reconcile reaches the next."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

from promoter.config import Repository
from promoter.daemon import Outcome, Workers, WorkQueue
from promoter.errors import ScmUnavailable
from promoter.logs import log_context
from promoter.models import PullRequest
from promoter.wiring import Daemon
from scm_plugins.local import LocalScm
from tests.support import GitOpsRepo, local_config, wait_for
from tests.support_logs import daemon_logs


class DownAfterTheFact(LocalScm):
    """The local SCM whose pull request lookups, while ``down``, happen and are then
    answered 503 (a proxy in front of the SCM that gave up)."""

    down = True

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        found = super().find_open_pull_request(repo=repo, head=head, base=base)
        if self.down:
            raise ScmUnavailable("503 Service Unavailable")
        return found


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def logged(out: io.StringIO, message: str) -> list[dict[str, Any]]:
    return [line for line in lines(out) if line["msg"] == message]


def test_a_reconciles_lines_down_to_the_scm_layer_carry_its_strategy_and_id_and_the_next_its_own(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state")
    scm = DownAfterTheFact(provider=config.provider("local"), state_dir=str(config.state_path()))
    runtime = Daemon(config, plugins={"local": scm}).runtime
    workers = Workers(runtime.queue, runtime.reconciler.reconcile, count=1)
    with daemon_logs() as out:
        workers.start()
        try:
            runtime.queue.add("guestbook")
            wait_for(lambda: logged(out, "reconcile failed"), what="a failed reconcile")
            scm.down = False
            wait_for(lambda: logged(out, "reconciled"), what="a reconcile that went through")
        finally:
            workers.stop()
    every = lines(out)
    assert every and all(line["strategy"] == "guestbook" for line in every)
    assert all(line.get("reconcile_id") for line in every), [
        line for line in every if not line.get("reconcile_id")
    ]
    failed = logged(out, "reconcile failed")[0]["reconcile_id"]
    done = logged(out, "reconciled")[0]["reconcile_id"]
    assert failed != done
    for reconcile in (failed, done):
        scm_calls = [
            line
            for line in every
            if line["reconcile_id"] == reconcile and line["logger"] == "promoter.scm"
        ]
        assert scm_calls, f"no SCM call logged in reconcile {reconcile}"


def test_a_worker_carries_nothing_of_one_reconcile_into_the_next() -> None:
    """The first key's reconcile adds an environment to the context and fails deep inside;
    the second key, on the same worker thread, logs with its own strategy and id only."""
    log = logging.getLogger("promoter.test")

    def reconcile(key: str) -> Outcome:
        if key == "first":
            with log_context(environment="environment/dev"):
                log.info("deep in the SCM layer")
                raise ScmUnavailable("503 Service Unavailable")
        log.info("deep in the SCM layer")
        return Outcome()

    queue = WorkQueue(base_delay=3600.0, max_delay=3600.0)  # the failed key is not retried
    workers = Workers(queue, reconcile, count=1)
    with daemon_logs() as out:
        workers.start()
        try:
            queue.add("first")
            wait_for(lambda: logged(out, "reconcile failed"), what="the first key's failure")
            queue.add("second")
            wait_for(lambda: len(logged(out, "deep in the SCM layer")) == 2, what="the second")
        finally:
            workers.stop()
    first, failure, second = lines(out)
    assert (first["strategy"], first["environment"]) == ("first", "environment/dev")
    assert failure["strategy"] == "first" and failure["reconcile_id"] == first["reconcile_id"]
    assert "environment" not in failure
    assert second["strategy"] == "second" and "environment" not in second
    assert second["reconcile_id"] != first["reconcile_id"]


def test_a_reconcile_called_directly_has_its_own_id_each_time(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    with daemon_logs() as out:
        runtime.reconciler.reconcile("guestbook")
        runtime.reconciler.reconcile("guestbook")
    every = lines(out)
    assert all(line["strategy"] == "guestbook" and line["reconcile_id"] for line in every)
    ids = [line["reconcile_id"] for line in logged(out, "reconciled")]
    assert len(ids) == 2 and ids[0] != ids[1]
    assert {line["reconcile_id"] for line in every} == set(ids)
    assert any(line["logger"] == "promoter.scm" for line in every)


def test_a_manual_operations_lines_carry_it_its_strategy_and_environment(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    with daemon_logs() as out:
        runtime.operations.promote("guestbook", "dev", reason="hotfix")
    every = lines(out)
    assert every and all(
        (line["strategy"], line["manual_operation"]) == ("guestbook", "promote") for line in every
    )
    writes = [
        line
        for line in every
        if line["logger"] == "promoter.scm"
        and line["operation"] in {"open_pull_request", "merge_pull_request"}
    ]
    assert {line["operation"] for line in writes} == {"open_pull_request", "merge_pull_request"}
    assert all(line["environment"] == "environment/dev" for line in writes)
