"""A strategy let go of (its shard moved to another replica) while its reconcile runs:
the reconcile, when it ends, keeps nothing of it (no view, no tracked commit, nothing
settled), as if it had ended before."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from promoter.daemon import Runtime
from promoter.wiring import build_plugins, with_state_dir
from tests.support import GitOpsRepo, local_config, wait_for

KEY = "guestbook"


class HeldProbes:
    """The background checks' planner, stopped in the middle of a reconcile (after its
    read and its tracked commits, before its view is kept) until ``release``."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.entered = threading.Event()
        self.release = threading.Event()

    def plan(self, *args: Any, **kwargs: Any) -> float | None:
        self.entered.set()
        assert self.release.wait(30)
        return self.real.plan(*args, **kwargs)  # type: ignore[no-any-return]


def test_a_strategy_let_go_of_during_its_reconcile_is_not_kept_when_it_ends(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = with_state_dir(local_config(gitops.path, tmp_path / "state"))
    runtime = Runtime(config, plugins=build_plugins(config))
    try:
        reconciler = runtime.reconciler
        reconciler.reconcile(KEY)
        tracked = reconciler.sha_index._by_strategy[KEY]
        assert tracked and KEY in reconciler.all_views()
        held = HeldProbes(reconciler.probes)
        reconciler.probes = held  # type: ignore[assignment]
        running = threading.Thread(target=reconciler.reconcile, args=(KEY,))
        running.start()
        wait_for(lambda: held.entered.is_set() or None, what="the reconcile in flight")
        reconciler.forget([KEY])
        held.release.set()
        running.join(30)
        assert not running.is_alive()
        assert KEY not in reconciler.all_views()
        assert all(not reconciler.sha_index.strategies_for(sha) for sha in tracked)
        assert runtime.settled.get(KEY) is None
    finally:
        runtime.stop()
