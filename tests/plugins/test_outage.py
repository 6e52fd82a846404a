"""A plugin whose SCM is down: an outage, told by the plugin, never taken for a hung plugin.

The plugin answers ``unavailable`` (or ``temporary``) at once: the process is kept,
the provider's calls pause (for the plugin's ``retryAfter`` when it gives one), and the
environments show the outage in the plugin's words. Only silence makes a plugin hung.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import ExternalPlugin, Repository, ScmProvider, parse_config
from promoter.errors import ScmOutage
from promoter.metrics import sample
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from tests.support import GitOpsRepo, wait_for

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]
SHA = "a" * 40
READ = "commitStatuses/get"


class Clock:
    """The host's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def host_of(tmp_path: Path, clock: Clock, **settings: Any) -> ExternalScm:
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings, timeout=30.0)
    return ExternalScm(
        provider=ScmProvider(name="flaky", plugin=plugin), state_dir=str(tmp_path), clock=clock
    )


def reached(record: Path) -> int:
    """How many status reads reached the plugin."""
    return record.read_text().splitlines().count(READ) if record.exists() else 0


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(name="gitops", url=str(tmp_path), scm_provider="flaky")


@pytest.mark.parametrize("code", [-32004, -32011], ids=["unavailable", "temporary"])
def test_prompt_outage_answers_are_never_taken_for_a_hung_plugin(
    tmp_path: Path, repo: Repository, code: int
) -> None:
    clock, record = Clock(), tmp_path / "calls"
    host = host_of(tmp_path, clock, outage=[READ], outageCode=code, record=str(record))
    process = host.process
    try:
        for _ in range(6):  # twice the time-outs that make a plugin hung
            with pytest.raises(ScmOutage, match=r"flaky is unavailable: .*the SCM is down"):
                host.get_commit_statuses(repo=repo, sha=SHA)
            clock.now += 60.0  # past any pause: each call reaches the plugin
        assert reached(record) == 6
        assert host.starts == 1 and host.process is process
        assert process is not None and process.alive
    finally:
        host.close()


def test_an_outage_pauses_the_providers_calls_for_the_retry_after_the_plugin_gave(
    tmp_path: Path, repo: Repository
) -> None:
    clock, record = Clock(), tmp_path / "calls"
    host = host_of(tmp_path, clock, outage=[READ], retryAfter=7, record=str(record))
    labels = {"provider": "flaky", "operation": "get_commit_statuses", "outcome": "paused"}
    paused_before = sample("promoter_scm_calls_total", labels)
    try:
        with pytest.raises(ScmOutage) as first:
            host.get_commit_statuses(repo=repo, sha=SHA)
        assert first.value.delay == 7
        clock.now += 5.0
        with pytest.raises(ScmOutage) as paused:
            host.get_commit_statuses(repo=repo, sha=SHA)
        assert paused.value.delay == pytest.approx(2.0)
        assert "the SCM is down" in str(paused.value)  # the plugin's words, still
        assert "calls resume in 2.0 s" in str(paused.value)
        assert reached(record) == 1  # the paused call never reached the plugin
        assert sample("promoter_scm_calls_total", labels) == paused_before + 1
        clock.now += 2.5
        with pytest.raises(ScmOutage):
            host.get_commit_statuses(repo=repo, sha=SHA)
        assert reached(record) == 2
    finally:
        host.close()


def test_without_a_retry_after_a_continuing_outage_backs_off_from_its_second_answer(
    tmp_path: Path, repo: Repository
) -> None:
    clock, record = Clock(), tmp_path / "calls"
    host = host_of(tmp_path, clock, outage=[READ], record=str(record))
    try:
        for expected in (None, 0.5, 1.0, 2.0):
            clock.now += 0.0 if expected is None else expected / 2  # the last pause ran out
            with pytest.raises(ScmOutage) as answered:
                host.get_commit_statuses(repo=repo, sha=SHA)
            assert answered.value.delay == expected
        assert reached(record) == 4
        with pytest.raises(ScmOutage, match=r"calls resume in 2\.0 s"):
            host.get_commit_statuses(repo=repo, sha=SHA)
        assert reached(record) == 4
    finally:
        host.close()


def test_an_outage_is_logged_when_it_starts_and_when_it_ends_naming_provider_and_plugin(
    tmp_path: Path, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    host = host_of(tmp_path, clock, outage=[READ])
    try:
        with caplog.at_level(logging.INFO, logger="promoter.plugins"):
            for _ in range(5):
                with pytest.raises(ScmOutage):
                    host.get_commit_statuses(repo=repo, sha=SHA)
                clock.now += 60.0
            host.find_open_pull_request(repo=repo, head="a", base="b")  # answered: it is back
    finally:
        host.close()
    said = [
        (r.getMessage(), r.provider, r.plugin)  # type: ignore[attr-defined]
        for r in caplog.records
        if "SCM" in r.getMessage()
    ]
    assert said == [
        ("SCM unavailable, as its plugin says: calls paused", "flaky", "misbehaving"),
        ("SCM available again", "flaky", "misbehaving"),
    ]


def config_text(repo: Path, state: Path, record: Path) -> str:
    return f"""
scmProviders:
  - name: flaky
    plugin:
      command: {MISBEHAVING}
      settings: {{outage: ["{READ}", "pullRequests/findOpen"], record: "{record}"}}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: flaky
promotionStrategies:
  - name: guestbook
    repository: gitops
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
daemon:
  stateDir: {state}
  resyncInterval: 1h
  workers: 1
  maxBackoff: 0.2s
"""


def test_the_environments_wait_for_the_scm_in_the_plugins_words_and_the_plugin_is_kept(
    tmp_path: Path,
) -> None:
    gitops, record = GitOpsRepo.create(tmp_path), tmp_path / "calls"
    daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", record)))
    plugin = daemon.runtime.plugins["flaky"]
    assert isinstance(plugin, ExternalScm)
    with TestClient(daemon.app) as client:
        wait_for(lambda: reached(record) >= 5, what="five reads answered unavailable")

        def shown() -> list[tuple[str, str]]:
            view = client.get("/api/v1/strategies/guestbook").json()
            return [(e["state"], e["reason"]) for e in view["environments"]]

        envs = wait_for(lambda: (s := shown()) and s[0][0] != "unknown" and s)
        assert [state for state, _ in envs] == ["blocked", "blocked"], envs
        assert all(r.startswith("waiting for the SCM: flaky is unavailable") for _, r in envs), envs
        assert all("the SCM is down" in reason for _, reason in envs)
        assert plugin.starts == 1
