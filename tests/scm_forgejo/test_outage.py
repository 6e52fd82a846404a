"""Forgejo down for a while: the Forgejo plugin answers ``unavailable``, is never restarted, and
the environments wait in Forgejo's words until it is back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import ExternalPlugin, Repository, ScmProvider, SecretRef, parse_config
from promoter.errors import ScmOutage
from promoter.metrics import sample
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from scm_plugins.external.health import MAX_PAUSE
from tests.support import GitOpsRepo, wait_for

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo
from .test_end_to_end import config_text

OUTAGE = 30.0


class Clock:
    """The host's monotonic clock, moved by hand: 30 s of outage in no time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clocked(
    forgejo: FakeForgejo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ExternalScm, Clock]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    plugin = ExternalPlugin(
        name="forgejo",
        directory=str(BIN),
        settings={"url": forgejo.url},
        secrets={"token": SecretRef(from_env=TOKEN_ENV)},
        timeout=10.0,
    )
    clock = Clock()
    made = ExternalScm(
        provider=ScmProvider(name="fj", plugin=plugin), state_dir=str(tmp_path), clock=clock
    )
    yield made, clock
    made.close()


@pytest.mark.parametrize("outage", [503, 0], ids=["503", "connections-closed"])
def test_the_forgejo_plugin_rides_out_30_s_of_forgejo_down_without_a_restart(
    clocked: tuple[ExternalScm, Clock], forgejo: FakeForgejo, bare: Path, outage: int
) -> None:
    host, clock = clocked
    repo = Repository(name="gitops", url=str(bare), scm_provider="fj", path=FULL_NAME)
    process = host.process
    forgejo.outage = outage
    ends = clock.now + OUTAGE
    said: list[str] = []
    while clock.now < ends:  # every worker's retry, one a second, for 30 s
        with pytest.raises(ScmOutage) as down:
            host.find_open_pull_request(repo=repo, head="a", base="b")
        said.append(str(down.value))
        clock.now += 1.0
    forgejo.outage = None
    clock.now += MAX_PAUSE
    assert host.find_open_pull_request(repo=repo, head="a", base="b") is None  # back
    assert host.starts == 1 and host.process is process
    assert process is not None and process.alive
    words = "503" if outage else "ConnectionError"
    assert all("fj is unavailable" in s and words in s for s in said)
    reached = [s for s in said if "calls resume in" not in s]
    assert 5 <= len(reached) < len(said)  # the others paused, never reaching Forgejo


def unavailable() -> float:
    """The daemon's calls that Forgejo's plugin answered ``unavailable``."""
    return sum(
        sample(
            "promoter_scm_calls_total",
            {"provider": "forgejo", "operation": operation, "outcome": "unavailable"},
        )
        for operation in ("find_pull_request", "get_commit_statuses", "open_pull_request")
    )


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
    return found


def test_a_daemon_on_forgejo_down_waits_in_forgejos_words_and_promotes_once_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, gitops.path)
        daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", fake.url)))
        plugin = daemon.runtime.plugins["forgejo"]
        assert isinstance(plugin, ExternalScm)
        with TestClient(daemon.app) as client:
            dev = "environment/dev"
            wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
            before = unavailable()
            fake.outage = 503
            change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
            wait_for(
                lambda: unavailable() >= before + 4,
                what="four reads answered unavailable",
            )
            shown = wait_for(lambda: (e := env_view(client, dev))["state"] == "blocked" and e)
            assert shown["reason"].startswith("waiting for the SCM: forgejo is unavailable")
            assert "503" in shown["reason"]
            fake.outage = None
            wait_for(lambda: env_view(client, dev).get("pullRequest"), what="the PR, once back")
        assert plugin.starts == 1
    assert change
