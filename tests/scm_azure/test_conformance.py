"""The Azure DevOps plugin, found by name and run out of process, passes the conformance kit."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli import main
from promoter.config import ExternalPlugin, Repository, SecretRef
from scm_plugins.external.conformance.kit import run_conformance
from scm_plugins.external.scratch import Scratch

from .conftest import BIN, NAME, PROJECT, TOKEN, TOKEN_ENV
from .fake_azure import FakeAzure


def plugin_spec(azure: FakeAzure, **settings: object) -> ExternalPlugin:
    return ExternalPlugin(
        name="azure-devops",
        directory=str(BIN),
        settings={"url": azure.url, **settings},
        secrets={"token": SecretRef(fromEnv=TOKEN_ENV)},
    )


def test_a_wrong_pat_fails_the_kit_with_an_auth_error_that_never_shows_the_pat(
    azure: FakeAzure, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "not-the-pat")
    repo = Repository(name="scratch", url=str(bare), scm_provider="azure", path=f"{PROJECT}/{NAME}")
    report = run_conformance(
        plugin_spec(azure), Scratch(repo, str(bare)), state_dir=str(tmp_path / "s")
    )
    assert not report.ok
    failed = next(c for c in report.checks if c.passed is False)
    assert failed.name == "open"
    assert "ScmAuthError" in failed.detail
    assert "not-the-pat" not in report.table()


def test_the_azure_devops_plugin_passes_the_conformance_kit(
    azure: FakeAzure, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    repo = Repository(name="scratch", url=str(bare), scm_provider="azure", path=f"{PROJECT}/{NAME}")
    report = run_conformance(
        plugin_spec(azure), Scratch(repo, str(bare)), state_dir=str(tmp_path / "state")
    )
    report.assert_passed()
    pulls = azure.pulls(azure.repo(PROJECT, NAME))
    [merged] = [p for p in pulls if p["status"] == "completed"]
    base = merged["targetRefName"].removeprefix("refs/heads/")
    assert merged["lastMergeCommit"]["commitId"] == Scratch(repo, str(bare)).tip(base)
    completions = [c for c in azure.calls if (c.body or {}).get("status") == "completed"]
    assert [c.status for c in completions] == [400, 200]  # the stale head, then the right one
    assert [p["status"] for p in pulls if p["status"] != "completed"] == ["abandoned"]


def test_promoter_plugins_check_passes_for_azure_devops(
    azure: FakeAzure,
    bare: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    code = main(
        [
            "plugins",
            "check",
            "azure-devops",
            "--dir",
            str(BIN),
            "--repository-url",
            str(bare),
            "--path",
            f"{PROJECT}/{NAME}",
            "--setting",
            f"url={azure.url}",
            "--secret-env",
            f"token={TOKEN_ENV}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    # its HTTP client ignores the proxy variables, which is how the kit cuts an SCM off
    not_offered = "events, own writes known in events, outage answered unavailable"
    assert f"15/15 passed; not offered: {not_offered}" in out  # reviews included
    assert TOKEN not in out
