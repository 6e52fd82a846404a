"""Racing pushes: the hydrator pushes a newer commit to ``<env>-next`` while a merge is in flight.

``RacingScm`` makes the race deterministic: just before the daemon's merge reaches
the local SCM, a newer dry commit is hydrated onto every ``-next`` branch, so the
merge's expected head SHA is stale and the SCM refuses it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from scm_plugins.local import LocalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

from .faults import CI, RacingScm, api_poster
from .history import (
    History,
    PrRecord,
    completion_problems,
    dry_order_problems,
    pull_request_problems,
)


@dataclass(frozen=True)
class Size:
    races_per_environment: int
    timeout: float


SMALL = Size(races_per_environment=1, timeout=45.0)
LARGE = Size(races_per_environment=3, timeout=120.0)


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(SMALL, id="small"),
        pytest.param(LARGE, marks=[pytest.mark.slow, pytest.mark.timeout(600)], id="large"),
    ],
)
def test_a_stale_head_is_never_merged_and_the_newer_change_promotes_through_the_same_pr(
    tmp_path: Path, gitops: GitOpsRepo, size: Size
) -> None:
    config = local_config(gitops.path, tmp_path / "state")
    repo = config.repository("gitops")
    inner = LocalScm(provider=config.provider("local"), state_dir=str(config.state_path()))
    versions = (f"2.{n}.0" for n in itertools.count())

    def hydrator_pushes(base: str) -> str:
        version = next(versions)
        return gitops.change(version, f"Bump guestbook to {version} during a merge into {base}")

    racing = RacingScm(
        inner, hydrator_pushes, race={b: size.races_per_environment for b in ENVIRONMENTS}
    )
    daemon = Daemon(config, plugins={"local": racing})
    history = History(gitops.path)
    expected_races = size.races_per_environment * len(ENVIRONMENTS)
    with TestClient(daemon.app) as client:
        ci = CI(gitops.path, ENVIRONMENTS, api_poster(client))
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")

        def finished() -> bool:
            if len(racing.races) < expected_races:
                return False
            open_prs = [pr for pr in inner.pull_requests(repo=repo) if pr.state.value == "open"]
            return not open_prs and not completion_problems(
                history, ENVIRONMENTS, racing.races[-1].new_dry_sha
            )

        ci.wait_for(finished, timeout=size.timeout, what="every race run and the last change out")

    prs = {pr.number: pr for pr in inner.pull_requests(repo=repo)}
    for race in racing.races:
        steps = history.steps(race.base)
        merged_heads = [s.merged_head for s in steps]
        assert race.stale_head not in merged_heads, f"{race} merged the stale head"
        assert history.dry_sha(race.stale_head) not in [s.dry_sha for s in steps]
        pr = prs[race.pr]
        assert pr.state.value == "merged", f"PR #{race.pr} was {pr.state.value}, not updated"
        assert pr.head_sha != race.stale_head
        promoted = history.dry_sha(pr.head_sha)
        assert history.is_ancestor(race.new_dry_sha, promoted)
        assert promoted[:7] in pr.title, f"PR #{race.pr} still says {pr.title!r}"
    records = [PrRecord.of(pr) for pr in prs.values()]
    assert dry_order_problems(history, ENVIRONMENTS, "main") == []
    assert pull_request_problems(history, records, ENVIRONMENTS) == []
