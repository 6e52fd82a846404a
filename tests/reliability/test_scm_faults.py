"""SCM faults: a fifth of the daemon's SCM calls fail, some are rate limited, some answers are lost.

The daemon runs in-process on the local SCM wrapped in ``FaultyScm``; CI reports
through the API (never faulted). Hydrated changes arrive at seeded random moments,
often while the previous one is still on its way.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from scm_plugins.local import LocalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

from .faults import CI, FaultPlan, FaultyScm, api_poster
from .history import (
    History,
    PrRecord,
    completion_problems,
    dry_order_problems,
    pull_request_problems,
)


@dataclass(frozen=True)
class Size:
    changes: int
    spacing: float
    """Each change waits up to this long (seeded) before the next is hydrated."""
    timeout: float


SMALL = Size(changes=3, spacing=2.0, timeout=45.0)
LARGE = Size(changes=12, spacing=3.0, timeout=180.0)


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(SMALL, id="small"),
        pytest.param(LARGE, marks=[pytest.mark.slow, pytest.mark.timeout(600)], id="large"),
    ],
)
def test_every_promotion_completes_once_when_a_fifth_of_scm_calls_fail(
    tmp_path: Path, gitops: GitOpsRepo, seed: int, size: Size
) -> None:
    # With a fifth of the calls failing, most reconciles fail even while they make progress,
    # and the per-key backoff doubles each time: capped at 2 s here instead of 5 min.
    config = local_config(gitops.path, tmp_path / "state", maxBackoff="2s")
    inner = LocalScm(provider=config.provider("local"), state_dir=str(config.state_path()))
    faulty = FaultyScm(inner, seed=seed, plan=FaultPlan(deck=25, unavailable=5, rate_limited=1))
    daemon = Daemon(config, plugins={"local": faulty})
    history, rng = History(gitops.path), random.Random(seed)
    last = ""
    with TestClient(daemon.app) as client:
        ci = CI(gitops.path, ENVIRONMENTS, api_poster(client))
        for number in range(1, size.changes + 1):
            last = gitops.change(f"1.{number}.0", f"Bump guestbook to 1.{number}.0")
            ci.run_for(rng.uniform(0, size.spacing))

        def finished() -> bool:
            prs = inner.pull_requests(repo=config.repository("gitops"))
            return not completion_problems(history, ENVIRONMENTS, last) and all(
                pr.state.value != "open" for pr in prs
            )

        ci.wait_for(finished, timeout=size.timeout, what="every environment to run the last change")

    prs = [PrRecord.of(pr) for pr in inner.pull_requests(repo=config.repository("gitops"))]
    assert dry_order_problems(history, ENVIRONMENTS, "main") == []
    assert pull_request_problems(history, prs, ENVIRONMENTS) == []
    assert faulty.early_calls() == [], "a call was made before the retry_after it was given"
    injected = {o: faulty.injected(o) for o in ("unavailable", "rate_limited", "lost_answer")}
    print(f"calls by workers: {len(faulty.calls)}, faults injected: {injected}")
    assert all(injected.values()), f"every kind of fault must have happened: {injected}"
