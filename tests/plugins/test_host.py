"""The host side of out-of-process plugins: handshake, secrets, logs, errors, crashes, threads."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from promoter.cli.sandbox import init_bare
from promoter.config import ExternalPlugin, Repository, ScmProvider
from promoter.errors import ConfigError, ScmRateLimited, ScmUnavailable
from promoter.models import CommitStatus, Phase
from scm_plugins.external import ExternalScm
from scm_plugins.external.errors import PluginError
from scm_plugins.registry import build_plugin
from tests.support import wait_for

from .scripted import write_plugin

LOCAL = [sys.executable, "-m", "scm_plugins.local", "--plugin"]
SHA = "a" * 40


def provider(**plugin: object) -> ScmProvider:
    return ScmProvider(name="ext", plugin=ExternalPlugin.model_validate(plugin))


def calls(operation: str, provider_label: str = "ext") -> float:
    from promoter.metrics import REGISTRY

    value = REGISTRY.get_sample_value(
        "promoter_scm_calls_total",
        {"provider": provider_label, "operation": operation, "outcome": "success"},
    )
    return value or 0.0


@pytest.fixture
def local(tmp_path: Path) -> ExternalScm:
    host = build_plugin(provider(command=LOCAL), state_dir=str(tmp_path / "state"))
    assert isinstance(host, ExternalScm)
    return host


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(name="r", url=str(init_bare(tmp_path / "r.git")), scm_provider="ext")


def test_the_registry_builds_an_out_of_process_plugin_for_a_plugin_provider(
    local: ExternalScm, repo: Repository
) -> None:
    before = calls("set_commit_status")
    status = CommitStatus(key="ci", phase=Phase.SUCCESS)
    local.set_commit_status(repo=repo, sha=SHA, status=status)
    assert [s.key for s in local.get_commit_statuses(repo=repo, sha=SHA)] == ["ci"]
    assert local.info is not None and local.info.name == "local"
    assert calls("set_commit_status") == before + 1
    local.close()


def test_two_providers_running_the_same_plugin_are_counted_apart(
    tmp_path: Path, repo: Repository
) -> None:
    hosts = {
        name: ExternalScm(
            provider=ScmProvider(name=name, plugin=ExternalPlugin(command=LOCAL)),
            state_dir=str(tmp_path / name),
        )
        for name in ("local-a", "local-b")
    }
    before = {name: calls("get_commit_statuses", name) for name in hosts}
    try:
        hosts["local-a"].get_commit_statuses(repo=repo, sha=SHA)
        hosts["local-b"].get_commit_statuses(repo=repo, sha=SHA)
        hosts["local-b"].get_commit_statuses(repo=repo, sha=SHA)
    finally:
        for host in hosts.values():
            host.close()
    assert calls("get_commit_statuses", "local-a") == before["local-a"] + 1
    assert calls("get_commit_statuses", "local-b") == before["local-b"] + 2


def test_a_plugin_speaking_another_protocol_version_is_refused_with_a_clear_message(
    tmp_path: Path,
) -> None:
    write_plugin(tmp_path, "future", version="promoter.scm/v9")
    with pytest.raises(PluginError) as refused:
        ExternalScm(
            provider=provider(name="future", directory=str(tmp_path)), state_dir=str(tmp_path)
        )
    assert "promoter.scm/v9" in str(refused.value)
    assert "promoter.scm/v1" in str(refused.value)


def test_a_plugin_missing_from_path_and_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="promoter-scm-nowhere"):
        ExternalScm(
            provider=provider(name="nowhere", directory=str(tmp_path)),
            state_dir=str(tmp_path),
            environ={"PATH": str(tmp_path)},
        )


def test_secrets_travel_in_initialize_never_on_the_command_line_in_the_environment_or_a_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PROMOTER_TEST_PLUGIN_SECRET", "s3cr3t-value")
    record = tmp_path / "record.json"
    write_plugin(tmp_path, "recorder", version="promoter.scm/v1", record=record)
    spec = {
        "name": "recorder",
        "directory": str(tmp_path),
        "settings": {"url": "https://scm.example.invalid"},
        "secrets": {"token": {"fromEnv": "PROMOTER_TEST_PLUGIN_SECRET"}},
    }
    with caplog.at_level(logging.DEBUG):
        host = ExternalScm(provider=provider(**spec), state_dir=str(tmp_path))
        host.close()
    seen = json.loads(record.read_text())
    assert seen["params"]["secrets"] == {"token": "s3cr3t-value"}
    assert seen["params"]["settings"] == {"url": "https://scm.example.invalid"}
    assert "s3cr3t-value" not in json.dumps(seen["argv"]) + json.dumps(seen["env"])
    assert "s3cr3t-value" not in caplog.text


def test_the_plugins_stderr_lines_become_log_lines_tagged_with_the_plugin(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_plugin(tmp_path, "talker", version="promoter.scm/v1")
    with caplog.at_level(logging.INFO, logger="promoter.plugins"):
        host = ExternalScm(
            provider=provider(name="talker", directory=str(tmp_path)), state_dir=str(tmp_path)
        )
        time.sleep(0.2)
        host.close()
    lines = [r for r in caplog.records if r.getMessage() == "plugin log"]
    assert [(r.plugin, r.line) for r in lines] == [("talker", "hello from the plugin")]  # type: ignore[attr-defined]


def test_a_typed_error_from_the_plugin_becomes_the_promoters_error(
    tmp_path: Path, repo: Repository
) -> None:
    write_plugin(tmp_path, "limited", version="promoter.scm/v1")
    host = ExternalScm(
        provider=provider(name="limited", directory=str(tmp_path)), state_dir=str(tmp_path)
    )
    with pytest.raises(ScmRateLimited) as limited:
        host.get_commit_statuses(repo=repo, sha=SHA)
    assert limited.value.retry_after == 7
    host.close()


def test_a_crashed_plugin_is_restarted_at_once_then_with_backoff(
    local: ExternalScm, repo: Repository
) -> None:
    for crash in (1, 2):
        process = local.process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        process.proc.wait()
        time.sleep(0.05)
        if crash == 2:
            with pytest.raises(ScmUnavailable, match="restarts in"):
                local.get_commit_statuses(repo=repo, sha=SHA)
            time.sleep(0.6)
        assert local.get_commit_statuses(repo=repo, sha=SHA) == []
    assert local.starts == 3  # started again twice
    local.close()


def test_calls_from_many_threads_each_get_their_own_answer(
    local: ExternalScm, repo: Repository
) -> None:
    shas = [f"{i:040x}" for i in range(16)]
    for i, sha in enumerate(shas):
        local.set_commit_status(
            repo=repo, sha=sha, status=CommitStatus(key=f"k{i}", phase=Phase.SUCCESS)
        )

    def read(i: int) -> str:
        return local.get_commit_statuses(repo=repo, sha=shas[i % 16])[0].key

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(read, range(160)))
    assert answers == [f"k{i % 16}" for i in range(160)]
    local.close()


def test_a_hung_plugin_is_killed_after_three_time_outs_and_restarted(
    local: ExternalScm, repo: Repository
) -> None:
    process = local.process
    assert process is not None
    local.timeout = 0.2
    os.kill(process.pid, signal.SIGSTOP)
    for _ in range(3):
        with pytest.raises(ScmUnavailable, match="did not answer"):
            local.get_commit_statuses(repo=repo, sha=SHA)
    process.proc.wait(30)  # killed by the host, frozen or not
    local.timeout = 10.0
    assert local.get_commit_statuses(repo=repo, sha=SHA) == []
    assert local.starts == 2 and local.process is not process
    local.close()


def test_two_providers_running_one_plugin_are_told_apart_in_its_log_lines(
    tmp_path: Path, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    write_plugin(tmp_path, "talker", version="promoter.scm/v1")
    with caplog.at_level(logging.INFO, logger="promoter.plugins"):
        hosts = [
            ExternalScm(
                provider=ScmProvider(
                    name=name, plugin=ExternalPlugin(name="talker", directory=str(tmp_path))
                ),
                state_dir=str(tmp_path / name),
            )
            for name in ("east", "west")
        ]
        process = hosts[0].process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        wait_for(lambda: any(r.getMessage() == "plugin exited" for r in caplog.records))
        with pytest.raises(ScmRateLimited):  # restarted, then its usual answer
            hosts[0].get_commit_statuses(repo=repo, sha=SHA)
        for host in hosts:
            host.close()
    said = {
        (r.getMessage(), r.provider, r.plugin)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "promoter.plugins"
    }
    assert said == {
        ("plugin started", "east", "talker"),
        ("plugin started", "west", "talker"),
        ("plugin log", "east", "talker"),
        ("plugin log", "west", "talker"),
        ("plugin exited", "east", "talker"),
        ("plugin crashed", "east", "talker"),
    }
