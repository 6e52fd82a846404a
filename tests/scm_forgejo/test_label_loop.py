"""A label Forgejo will not keep (and the token may not create) is reported once, not looped on.

Forgejo drops a label name the repository lacks without an error. With label creation
refused, the promotion PR opens without its ``promotion`` label; every later pass finds
it missing. The promoter must not rewrite the PR at once for ever: it sets the label
aside, logs it once, shows it in the API, and asks again only after a backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo
from .test_end_to_end import config_text, env_view, set_status

DEV = "environment/dev"


@pytest.fixture
def running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, FakeForgejo, GitOpsRepo]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    gitops = GitOpsRepo.create(tmp_path)
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, gitops.path)
        fake.fail_next("POST", r"/labels$", 403, times=10_000)  # the token may not make labels
        daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", fake.url)))
        with TestClient(daemon.app) as client:
            wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
            for branch in ENVIRONMENTS:
                set_status(client, gitops.tip(branch), "health")
            yield client, fake, gitops


def label_writes(fake: FakeForgejo) -> int:
    return sum(1 for c in fake.calls if (c.method, c.path[-7:]) == ("PUT", "/labels"))


def reconciled(client: TestClient) -> Any:
    return client.get("/api/v1/strategies/guestbook").json()["reconciledAt"]


def test_a_label_forgejo_drops_is_reported_once_and_never_rewritten_in_a_loop(
    running: tuple[TestClient, FakeForgejo, GitOpsRepo], caplog: pytest.LogCaptureFixture
) -> None:
    client, fake, gitops = running
    with caplog.at_level(logging.WARNING, logger="promoter.actions"):
        gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        dev = wait_for(lambda: (e := env_view(client, DEV)).get("labelsNotKept") and e)
        assert dev["labelsNotKept"] == ["promotion"]
        assert dev["pullRequest"]["labels"] == []
        opened = len(fake.pulls_of(FULL_NAME))
        assert label_writes(fake) == opened  # one per PR, as it opened (all in one pass)
        for _ in range(3):  # wake it: each pass finds the label missing again
            before = reconciled(client)
            set_status(client, gitops.tip(DEV), "health")
            wait_for(lambda b=before: reconciled(client) != b, what="another reconcile")
        assert label_writes(fake) == opened  # never written again in a loop
        assert env_view(client, DEV)["pullRequest"]["state"] == "open"
    reports = [r for r in caplog.records if "did not keep labels" in r.getMessage()]
    assert len(reports) == 1
    assert reports[0].labels == ["promotion"]  # type: ignore[attr-defined]
