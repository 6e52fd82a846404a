"""A PromotionStrategy created in the cluster promotes like promoter.yaml's, and its status
is written once per change, never on an idle resync."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.kube.controller import Controller
from tests.kube.cluster import Cluster, fake_cluster, local_objects, wait_until
from tests.support import git_children

ENVS = ["environment/dev", "environment/staging"]
KEY = "team.guestbook"


def environments(cluster: Cluster) -> dict[str, dict[str, Any]]:
    status = cluster.status("promotionstrategies", "guestbook")
    return {e["branch"]: e for e in status.get("environments", [])}


def at(cluster: Cluster, dry_sha: str) -> bool:
    envs = environments(cluster)
    return len(envs) == 2 and all(
        e["active"].get("drySha") == dry_sha and e["state"] == "up-to-date" for e in envs.values()
    )


def ready(cluster: Cluster) -> dict[str, Any] | None:
    status = cluster.status("promotionstrategies", "guestbook")
    return next((c for c in status.get("conditions", []) if c["type"] == "Ready"), None)


def at_first_commit(cluster: Cluster, repo: GitOpsRepo) -> Controller:
    """Replica a started on the guestbook objects, both environments at the first commit."""
    replica = cluster.replica("a")
    replica.start()
    local_objects(cluster, repo.path)
    first = git(repo.path, "rev-parse", "main")
    wait_until(lambda: at(cluster, first), what="both environments at the first commit")
    return replica


def settle(cluster: Cluster, seconds: float = 0.6) -> None:
    """Wait until every replica's queue and writes to the API server have been idle for
    ``seconds``."""
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < seconds:
        if not all(r.runtime.queue.idle() and r.publisher.idle() for r in cluster.replicas):
            quiet_since = time.monotonic()
        time.sleep(0.02)


def test_a_strategy_created_in_the_cluster_promotes_through_the_local_scm(tmp_path: Path) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        at_first_commit(cluster, repo)
        change = repo.change("1.1.0", "Bump guestbook", ENVS)
        wait_until(lambda: at(cluster, change), what="the change promoted to staging")
        for branch in ENVS:
            assert len(git(repo.path, "rev-list", "--merges", branch).split()) == 1
        status = cluster.status("promotionstrategies", "guestbook")
        assert status["observedGeneration"] == 1
        assert (ready(cluster) or {})["status"] == "True"
        dev = environments(cluster)["environment/dev"]
        assert dev["proposed"]["drySha"] == change
        assert dev["active"]["commitStatus"]["phase"] == "success"
        reasons = {e["reason"] for e in cluster.fake.items("events")}
        assert {"PromotionOpened", "Promoted"} <= reasons


SLOW = 6.0
"""Seconds the slow API server takes for each status write and each Event."""


def merged_once(repo: GitOpsRepo) -> bool:
    return all(len(git(repo.path, "rev-list", "--merges", branch).split()) == 1 for branch in ENVS)


def test_a_slow_api_server_holds_no_promotion_back(tmp_path: Path) -> None:
    """The status and the Events are written off the reconciles: while every status write
    and every Event takes SLOW seconds, a change is merged into both environments at the
    SCM's pace (written in the reconcile, each of the reconciles it takes would wait for
    them), and the status shows it once the API server is fast again."""
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        at_first_commit(cluster, repo)
        settle(cluster)
        cluster.fake.write_delays.update({"promotionstrategies/status": SLOW, "events": SLOW})
        written = len(cluster.fake.statuses[("promotionstrategies", "guestbook")])
        started = time.monotonic()
        change = repo.change("1.1.0", "Bump guestbook", ENVS)
        wait_until(lambda: merged_once(repo), timeout=SLOW, what="the change merged in both")
        took = time.monotonic() - started
        assert not at(cluster, change)  # the status has not caught up: the writes are slow
        cluster.fake.write_delays.clear()
        wait_until(lambda: at(cluster, change), what="the status showing the change promoted")
        settle(cluster)
        writes = len(cluster.fake.statuses[("promotionstrategies", "guestbook")]) - written
        print(f"merged in both after {took:.2f} s; {writes} status writes since")
        reasons = [e["reason"] for e in cluster.fake.items("events")]
        assert reasons.count("Promoted") == 2  # every Event created, in the end


def test_the_status_is_written_once_per_change_and_not_on_an_idle_resync(tmp_path: Path) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        replica = cluster.replica("a")
        replica.start()
        local_objects(cluster, repo.path)
        change = repo.change("1.1.0", "Bump guestbook", ENVS)
        wait_until(lambda: at(cluster, change), what="the change promoted")
        settle(cluster)
        written = cluster.fake.statuses[("promotionstrategies", "guestbook")]
        for before, after in itertools.pairwise(written):
            assert before != after, "a status was written twice unchanged"
        count = len(written)
        runtime = replica.runtime
        for _ in range(3):
            runtime.scheduler.resync()
            # A quiet strategy is read again in its turn of the resync's sweep, spread
            # over the next interval: run every strategy now, as that turn would.
            runtime.queue.add_many(s.name for s in runtime.strategies())
            settle(cluster)
        idle = len(cluster.fake.statuses[("promotionstrategies", "guestbook")]) - count
        print(f"status writes: {count} for the promotion, {idle} over 3 idle resyncs")
        assert idle == 0
        assert replica.writer.skipped >= 3


def test_an_edit_that_changes_nothing_still_moves_observed_generation(tmp_path: Path) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        at_first_commit(cluster, repo)
        spec = cluster.fake.get("promotionstrategies", "team", "guestbook")["spec"]  # type: ignore[index]
        cluster.patch_spec("promotionstrategies", "guestbook", {**spec, "dryBranch": "main"})
        wait_until(
            lambda: cluster.status("promotionstrategies", "guestbook")["observedGeneration"] == 2,
            what="observedGeneration 2",
        )


def test_a_runtime_replaced_by_a_configuration_change_stops_its_git_processes(
    tmp_path: Path,
) -> None:
    """Every change to the cluster's objects builds a new runtime: the old one's mirrors'
    persistent ``cat-file`` processes end with it, not when it is collected."""
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        replica = at_first_commit(cluster, repo)
        old = replica.runtime
        mirror = old.mirrors.get(
            old.config.repository(old.config.promotion_strategies[0].repository)
        )
        running = wait_until(lambda: git_children(mirror.path), what="the mirror's cat-file")
        spec = cluster.fake.get("promotionstrategies", "team", "guestbook")
        assert spec is not None
        gated = {**spec["spec"], "proposedCommitStatuses": [{"key": "ci"}]}
        cluster.patch_spec("promotionstrategies", "guestbook", gated)
        wait_until(lambda: replica.runtime is not old, what="a new runtime")
        wait_until(
            lambda: not set(running) & set(git_children(mirror.path)),
            timeout=5,
            what=f"the old runtime's git processes {sorted(running.values())} to end",
        )
