"""Lost webhooks: GitHub's deliveries never arrive; the periodic resync alone promotes.

The daemon runs in-process with the GitHub plugin against the fake GitHub, with
webhooks configured (as in production) but none ever delivered, and no ref polling:
a push, a commit status or a check run reaches the daemon only through the resync.
Each environment must be promoted within one resync interval of the gate that
unblocks it turning green (plus ``SLACK`` for the reconcile itself on a busy machine).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.daemon import poll_interval
from promoter.wiring import Daemon
from tests.scm_github.fake_github import FakeGitHub
from tests.scm_github.genuine import Genuine
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .history import History, PrRecord, dry_order_problems, pull_request_problems

FULL_NAME = "acme/gitops"
TOKEN_ENV, TOKEN = "PROMOTER_RELIABILITY_GITHUB_TOKEN", "ghp_Re1iab1e0000000000000000000000000000"
SECRET_ENV, SECRET = "PROMOTER_RELIABILITY_HOOK_SECRET", "reliability-hook-secret"
RESYNC = 2.0
SLACK = 1.5
HEALTH_AFTER = 0.5
"""An environment's health check turns green this long after it was promoted."""


@dataclass(frozen=True)
class Size:
    changes: int


SMALL = Size(changes=1)
LARGE = Size(changes=4)


def config_text(repo: Path, state: Path) -> str:
    return f"""
scmProviders:
  - name: github
    github: {{token: {{fromEnv: {TOKEN_ENV}}}}}
repositories:
  - {{name: gitops, url: {repo}, path: {FULL_NAME}, scmProvider: github}}
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod}}
webhooks:
  github: {{secrets: [{{fromEnv: {SECRET_ENV}}}]}}
daemon: {{stateDir: {state}, resyncInterval: {RESYNC}s, workers: 2}}
"""


@pytest.fixture
def fake(genuine_fixtures: Path, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(Genuine(genuine_fixtures), tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


def pulls(fake: FakeGitHub, state: str = "all") -> list[dict[str, Any]]:
    with fake._lock:  # pulls_of iterates the fake's PRs, which the daemon's workers change
        return fake.pulls_of(FULL_NAME, state=state)


def open_pull_request(fake: FakeGitHub, base: str) -> bool:
    return any(pr["base"]["ref"] == base for pr in pulls(fake, "open"))


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(SMALL, id="small"),
        pytest.param(LARGE, marks=[pytest.mark.slow, pytest.mark.timeout(600)], id="large"),
    ],
)
def test_the_periodic_resync_alone_promotes_each_environment_within_one_interval(
    tmp_path: Path,
    gitops: GitOpsRepo,
    fake: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    size: Size,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    config = parse_config(config_text(gitops.path, tmp_path / "state"))
    assert poll_interval(config, config.repository("gitops")) is None  # the resync alone
    history = History(gitops.path)
    for branch in ENVIRONMENTS:
        fake.post_status(FULL_NAME, gitops.tip(branch), "health", "success")
    waits: list[tuple[str, float]] = []
    daemon = Daemon(config)
    with TestClient(daemon.app):  # nothing is ever posted to /webhooks/github
        for number in range(1, size.changes + 1):
            change = gitops.change(f"1.{number}.0", f"Bump guestbook to 1.{number}.0")
            # CI finishes after the daemon has seen the push (and read the pending checks).
            wait_for(partial(open_pull_request, fake, ENVIRONMENTS[0]), timeout=RESYNC + 10)
            for branch in ENVIRONMENTS:
                fake.post_check_run(
                    FULL_NAME, gitops.tip(f"{branch}-next"), "ci", "completed", "success"
                )
            green, gate = time.monotonic(), "ci"
            for branch in ENVIRONMENTS:
                wait_for(
                    partial(history.runs, branch, change),
                    timeout=RESYNC + SLACK,
                    what=f"{branch} to run {change[:7]} within one resync interval ({RESYNC}s"
                    f" + {SLACK}s) of {gate} turning green; so far {waits}",
                )
                waits.append((branch, round(time.monotonic() - green, 2)))
                time.sleep(HEALTH_AFTER)  # the environment syncs, then its health turns green
                fake.post_status(FULL_NAME, gitops.tip(branch), "health", "success")
                green, gate = time.monotonic(), f"{branch}'s health"
    print(f"seconds from the unblocking gate to the merge: {waits}")
    prs = [
        PrRecord(
            pr["number"],
            pr["head"]["ref"],
            pr["base"]["ref"],
            pr["head"]["sha"],
            "merged" if pr["merged"] else pr["state"],
            pr["merge_commit_sha"],
        )
        for pr in pulls(fake)
    ]
    assert dry_order_problems(history, ENVIRONMENTS, "main") == []
    assert pull_request_problems(history, prs, ENVIRONMENTS) == []
