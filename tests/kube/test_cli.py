"""`promoter serve --kubernetes` refuses what cluster mode cannot use, with a clear message."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli import main


@pytest.fixture(autouse=True)
def root_logging_restored() -> Iterator[None]:
    """``serve`` configures the root logger for the process: undo it after each test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_serve_without_a_config_outside_kubernetes_mode_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve"]) == 2
    assert "serve needs --config (or --kubernetes)" in capsys.readouterr().err


def test_kubernetes_mode_refuses_strategies_in_the_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promoter.yaml"
    config.write_text(
        "scmProviders: [{name: local, local: {}}]\n"
        f"daemon: {{stateDir: {tmp_path / 'state'}}}\n",
        encoding="utf-8",
    )
    assert main(["serve", "--kubernetes", "--config", str(config), "--plain-logs"]) == 2
    assert "come from custom resources" in capsys.readouterr().err


def test_kubernetes_mode_without_a_cluster_or_kubeconfig_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    missing = tmp_path / "no-kubeconfig"
    args = ["serve", "--kubernetes", "--kubeconfig", str(missing), "--state-dir", str(tmp_path)]
    assert main([*args, "--plain-logs"]) == 2
    assert f"no usable kubeconfig ({missing})" in capsys.readouterr().err


def test_shards_take_the_pods_address_uid_and_the_peer_secret_from_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    from promoter.config import Config
    from promoter.kube.cli import add_serve_arguments, shard_settings

    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    monkeypatch.setenv("POD_IP", "10.0.3.7")
    monkeypatch.setenv("POD_NAME", "promoter-7d9c-x2")
    monkeypatch.setenv("POD_UID", "5e0c0d1e")
    monkeypatch.setenv("PROMOTER_PEER_TOKEN", "s3cret")
    base = Config.model_validate({"daemon": {"port": 9090}})
    assert shard_settings(parser.parse_args(["--kubernetes"]), base) is None
    settings = shard_settings(parser.parse_args(["--kubernetes", "--shards", "32"]), base)
    assert settings is not None
    assert (settings.count, settings.address, settings.peer_token) == (
        32,
        "http://10.0.3.7:9090",
        "s3cret",
    )
    assert settings.owner == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "promoter-7d9c-x2",
        "uid": "5e0c0d1e",
    }
    assert "s3cret" not in repr(settings)
