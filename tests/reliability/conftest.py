"""Fixtures of the fault-injection suite: the seed and the GitOps repository.

Every test runs a small size by default; its larger size is a separate parameter
marked ``slow`` (``pytest -m slow tests/reliability``). Randomness is seeded: the
seed is printed and shown with any failure; ``PROMOTER_RELIABILITY_SEED=N`` replays
it (the timing of threads and processes still varies from run to run).
"""

from __future__ import annotations

import os
import random
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.support import GitOpsRepo

SEED_ENV = "PROMOTER_RELIABILITY_SEED"
seed_key = pytest.StashKey[int]()


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's random seed: ``$PROMOTER_RELIABILITY_SEED`` or a fresh one, printed."""
    value = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
    request.node.stash[seed_key] = value
    print(f"reliability seed {value}: replay with {SEED_ENV}={value}")
    return value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and seed_key in item.stash:
        value = item.stash[seed_key]
        report.sections.append(("reliability seed", f"{SEED_ENV}={value}"))
    return report


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)
