"""A replica lets go of what it kept about the repositories of shards that moved to
another replica: the strategies' views, the commits they tracked, their mirrors' git
processes. A replica that once held everything (the first of a scale-up) would otherwise
keep all of it. Taken back later, such a repository is read afresh and promotes."""

from __future__ import annotations

import os
from pathlib import Path

from promoter.kube.controller import Controller
from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import all_promoted, fleet, leased, owner_of, settled
from tests.kube.shards.test_shards import TIMED


def cat_files(under: Path) -> set[str]:
    """The mirrors under ``under`` that a ``git cat-file`` process runs in."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            where = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if b"cat-file" in command and where.is_relative_to(under):
            found.add(where.name.removesuffix(".git"))
    return found


def kept_views(replica: Controller) -> set[str]:
    return set(replica.runtime.reconciler.all_views())


def test_a_replica_lets_go_of_the_repositories_of_shards_that_moved_away(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 6)
        a = cluster.sharded("a", **TIMED)
        wait_until(lambda: settled(cluster, [a]), what="a to hold every shard")
        first = {name: repo.tip("main") for name, repo in repos.items()}
        wait_until(lambda: all_promoted(cluster, first), what="every strategy read by a")
        mirrors = Path(a.runtime.mirrors.root)
        strategies = {f"{NS}.{name}" for name in repos}
        assert kept_views(a) == strategies
        wait_until(lambda: len(cat_files(mirrors)) == len(repos), what="a's mirrors read")

        b = cluster.sharded("b", **TIMED)
        wait_until(lambda: settled(cluster, [a, b]), what="b to take its share")
        moved = {name for name in repos if owner_of([a, b], name) is b}
        stayed = set(repos) - moved
        assert moved and stayed
        gone = {f"{NS}.{name}" for name in moved}
        wait_until(lambda: not kept_views(a) & gone, what="a to let go of b's strategies")
        assert kept_views(a) >= {f"{NS}.{name}" for name in stayed}
        moved_repos = {f"{NS}.repo-{name.removeprefix('app-')}" for name in moved}
        wait_until(  # stopped in a thread of their own (``MirrorPool.release``)
            lambda: not cat_files(mirrors) & moved_repos,
            what="a's mirrors of b's repositories to stop their processes",
        )
        assert cat_files(mirrors) >= {f"{NS}.repo-{n.removeprefix('app-')}" for n in stayed}
        for name in moved:  # the commits they tracked are no longer a's
            tip = repos[name].tip("environment/dev")
            assert not a.runtime.sha_index.strategies_for(tip)

        b.stop()  # a takes b's shards back, and reads them afresh
        wait_until(lambda: leased(cluster, [a]), what="a to hold every shard again")
        changes = {name: repos[name].change("2.0.0", f"Bump {name}", None) for name in moved}
        a.runtime.enqueue([f"{NS}.{name}" for name in moved])
        wait_until(lambda: all_promoted(cluster, changes), what="the moved strategies promoted")
