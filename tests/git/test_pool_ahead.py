"""A first start clones its mirrors ahead of the reconciles that read them.

The start queues every strategy of a repository together, repository after repository;
without the clones ahead, each repository's first reconcile cloned its mirror while the
other workers waited for that mirror's lock, and the start's Python work stood still for
every clone. A mirror with no ref yet is cloned without an ``ls-remote`` first.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.git.pool import MirrorPool
from promoter.metrics import REGISTRY
from promoter.wiring import Daemon
from tests.gitrepo import GitSandbox
from tests.support import GitOpsRepo, local_config, wait_for


def ls_remotes(name: str) -> float:
    found = REGISTRY.get_sample_value("promoter_git_ls_remote_total", {"repository": name})
    return found or 0.0


def remotes(tmp_path: Path, count: int) -> list[Repository]:
    repos = []
    for i in range(count):
        remote = GitSandbox(tmp_path, name=f"remote-{i}")
        remote.commit_dry({"apps/a/values.yaml": f"v: {i}\n"}, "Add")
        repos.append(
            Repository(name=f"ahead-{i}-{tmp_path.name}", url=remote.url, scm_provider="local")
        )
    return repos


def test_a_mirror_with_no_ref_is_cloned_without_asking_the_remote_first(tmp_path: Path) -> None:
    (repo,) = remotes(tmp_path, 1)
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    before = ls_remotes(repo.name)
    assert pool.get(repo).refresh() is True
    assert ls_remotes(repo.name) == before
    assert pool.get(repo).branch_sha("main")
    assert pool.get(repo).refresh() is False  # from now on, one ls-remote a refresh
    assert ls_remotes(repo.name) == before + 1


def test_an_empty_remote_is_no_move(tmp_path: Path) -> None:
    remote = GitSandbox(tmp_path, name="empty")
    repo = Repository(name=f"empty-{tmp_path.name}", url=remote.url, scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    assert pool.poll(repo) is False
    assert pool.poll(repo) is False
    assert pool.get(repo).refs() == {}


def test_repositories_are_refreshed_ahead_in_order_and_a_failure_stops_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = remotes(tmp_path, 3)
    gone = Repository(name="gone", url=str(tmp_path / "nowhere.git"), scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    order: list[str] = []
    fresh = pool.fresh

    def recorded(repo: Repository):  # type: ignore[no-untyped-def]
        order.append(repo.name)
        return fresh(repo)

    pool.fresh = recorded  # type: ignore[method-assign]
    caplog.set_level("INFO", logger="promoter.mirrors")
    pool.refresh_ahead([good[0], gone, good[1], good[2]]).join(timeout=30)
    assert order == [good[0].name, "gone", good[1].name, good[2].name]
    assert all(pool.refreshed(r.name) and pool.get(r).branch_sha("main") for r in good)
    assert [r.repository for r in caplog.records] == ["gone"]  # type: ignore[attr-defined]
    # a reconcile that comes after finds its mirror fresh: no second refresh
    before = ls_remotes(good[1].name)
    pool.fresh = fresh  # type: ignore[method-assign]
    pool.fresh(good[1])
    assert ls_remotes(good[1].name) == before


def test_closing_the_pool_stops_the_clones_ahead_between_two_repositories(
    tmp_path: Path,
) -> None:
    repos = remotes(tmp_path, 3)
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    started, release = threading.Event(), threading.Event()
    fresh = pool.fresh

    def held(repo: Repository):  # type: ignore[no-untyped-def]
        started.set()
        release.wait(10)
        return fresh(repo)

    pool.fresh = held  # type: ignore[method-assign]
    thread = pool.refresh_ahead(repos)
    assert started.wait(10)
    pool.close()
    release.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert [pool.refreshed(r.name) for r in repos] == [True, False, False]


def test_the_first_resync_clones_every_mirror_before_any_worker_runs(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    repo = runtime.config.repository("gitops")
    assert not runtime.mirrors.refreshed("gitops")
    runtime.scheduler.resync()  # the workers were never started: no reconcile clones it
    wait_for(lambda: runtime.mirrors.refreshed("gitops") or None, what="the clone ahead")
    main = subprocess.run(
        ["git", "rev-parse", "main"], cwd=gitops.path, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert wait_for(lambda: runtime.mirrors.get(repo).branch_sha("main"), what="the clone") == main
    assert not runtime.queue.idle()  # its strategies still wait for a worker
    runtime.mirrors.close()
    for plugin in runtime.plugins.values():
        plugin.close()


def test_releasing_a_mirror_busy_in_a_hanging_fetch_does_not_wait_for_it(tmp_path: Path) -> None:
    """A shard moved away while its mirror fetches from a git server that hangs: the
    controller's thread goes on at once, and the mirror's processes stop once it is free."""
    (repo,) = remotes(tmp_path, 1)
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    mirror = pool.fresh(repo)
    assert mirror.branch_sha("main")  # its persistent cat-file runs
    fetching, done = threading.Event(), threading.Event()

    def hanging_fetch() -> None:
        with mirror.lock:
            fetching.set()
            done.wait(30)

    holder = threading.Thread(target=hanging_fetch)
    holder.start()
    try:
        assert fetching.wait(30)
        released = threading.Thread(target=pool.release, args=([repo.name],))
        released.start()
        released.join(20)  # the fetch hangs 30 s: a release that waited for it is caught
        assert not released.is_alive(), "release waited for the mirror's fetch"
    finally:
        done.set()
        holder.join(5)
    wait_for(lambda: mirror._repo is None, what="the mirror's processes stopped")
    assert pool.fresh(repo).branch_sha("main")  # used again: refreshed, processes again
