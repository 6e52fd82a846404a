"""Both Bitbucket plugins, served out of process by their commands, pass the conformance kit
against their fakes; ``promoter plugins list`` shows them, ``plugins check`` passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli import main
from promoter.config import ExternalPlugin, Repository, SecretRef
from scm_plugins.external.conformance.kit import run_conformance
from scm_plugins.external.scratch import Scratch

from .conftest import (
    BIN,
    PASSWORD,
    PASSWORD_ENV,
    PROJECT_REPO,
    TOKEN,
    TOKEN_ENV,
    USERNAME,
    WORKSPACE_REPO,
)
from .fake_cloud import FakeCloud
from .fake_datacenter import FakeDataCenter


def test_the_cloud_plugin_passes_the_conformance_kit(
    cloud: FakeCloud, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    plugin = ExternalPlugin(
        name="bitbucket-cloud",
        directory=str(BIN),
        settings={"url": cloud.url, "username": USERNAME},
        secrets={"password": SecretRef(fromEnv=PASSWORD_ENV)},
    )
    repo = Repository(name="scratch", url=str(bare), scm_provider="c", path=WORKSPACE_REPO)
    report = run_conformance(plugin, Scratch(repo, str(bare)), state_dir=str(tmp_path / "state"))
    report.assert_passed()
    [merged] = [p for p in cloud.pulls_of(WORKSPACE_REPO) if p["state"] == "MERGED"]
    base = Scratch(repo, str(bare)).tip(merged["destination"]["branch"]["name"])
    assert base is not None and base.startswith(merged["merge_commit"]["hash"])
    # The stale head was refused before Bitbucket was asked to merge: one merge call only.
    assert [c.status for c in cloud.count("POST", r"/merge$")] == [200]


def test_the_datacenter_plugin_passes_the_conformance_kit(
    datacenter: FakeDataCenter, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    plugin = ExternalPlugin(
        name="bitbucket-datacenter",
        directory=str(BIN),
        settings={"url": datacenter.base_url},
        secrets={"token": SecretRef(fromEnv=TOKEN_ENV)},
    )
    repo = Repository(name="scratch", url=str(bare), scm_provider="d", path=PROJECT_REPO)
    report = run_conformance(plugin, Scratch(repo, str(bare)), state_dir=str(tmp_path / "state"))
    report.assert_passed()
    [merged] = [p for p in datacenter.pulls_of(PROJECT_REPO) if p["state"] == "MERGED"]
    base = Scratch(repo, str(bare)).tip(merged["toRef"]["displayId"])
    assert base == merged["properties"]["mergeCommit"]["id"]


@pytest.mark.parametrize("product", ["bitbucket-cloud", "bitbucket-datacenter"])
def test_promoter_plugins_check_passes_for_each_bitbucket(
    product: str,
    cloud: FakeCloud,
    datacenter: FakeDataCenter,
    bare: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    if product == "bitbucket-cloud":
        where = ["--path", WORKSPACE_REPO, "--setting", f"url={cloud.url}"]
        where += ["--setting", f"username={USERNAME}", "--secret-env", f"password={PASSWORD_ENV}"]
    else:
        where = ["--path", PROJECT_REPO, "--setting", f"url={datacenter.base_url}"]
        where += ["--secret-env", f"token={TOKEN_ENV}"]
    code = main(
        ["plugins", "check", product, "--dir", str(BIN), "--repository-url", str(bare), *where]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "16/16 passed; not offered: events, own writes known in events" in out
    assert "pass  outage answered unavailable" in out
    assert PASSWORD not in out and TOKEN not in out


def test_promoter_plugins_list_shows_both_bitbucket_plugins(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plugins", "list", "--dir", str(BIN)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert {"bitbucket-cloud", "bitbucket-datacenter"} <= set(rows)


def test_a_wrong_password_fails_the_kit_with_an_auth_error_and_never_shows_it(
    cloud: FakeCloud, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "not-the-app-password")
    plugin = ExternalPlugin(
        name="bitbucket-cloud",
        directory=str(BIN),
        settings={"url": cloud.url, "username": USERNAME},
        secrets={"password": SecretRef(fromEnv=PASSWORD_ENV)},
    )
    repo = Repository(name="scratch", url=str(bare), scm_provider="c", path=WORKSPACE_REPO)
    report = run_conformance(plugin, Scratch(repo, str(bare)), state_dir=str(tmp_path / "s"))
    assert not report.ok
    failed = next(c for c in report.checks if c.passed is False)
    assert (failed.name, "ScmAuthError" in failed.detail) == ("open", True)
    assert "not-the-app-password" not in report.table()
