"""The Forgejo plugin, found by name and run out of process, passes the conformance kit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from promoter.cli import main
from promoter.config import ExternalPlugin, Repository, ScmProvider, SecretRef
from scm_plugins.external import ExternalScm
from scm_plugins.external.conformance.kit import run_conformance
from scm_plugins.external.errors import PluginError
from scm_plugins.external.scratch import Scratch
from scm_plugins.forgejo.__main__ import VERSION

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo


def test_the_forgejo_plugin_passes_the_conformance_kit(
    forgejo: FakeForgejo, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    plugin = ExternalPlugin(
        name="forgejo",
        directory=str(BIN),
        settings={"url": forgejo.url},
        secrets={"token": SecretRef(fromEnv=TOKEN_ENV)},
    )
    repo = Repository(name="scratch", url=str(bare), scm_provider="forgejo", path=FULL_NAME)
    report = run_conformance(plugin, Scratch(repo, str(bare)), state_dir=str(tmp_path / "state"))
    report.assert_passed()
    merged = [p for p in forgejo.pulls_of(FULL_NAME) if p["merged"]]
    assert len(merged) == 1
    assert merged[0]["merge_commit_sha"] == Scratch(repo, str(bare)).tip(merged[0]["base"]["ref"])
    merges = [c for c in forgejo.calls if c.path.endswith("/merge")]
    assert [c.status for c in merges] == [409, 200]  # the stale head, then the right one


def test_promoter_plugins_check_passes_for_forgejo(
    forgejo: FakeForgejo,
    bare: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    code = main(
        [
            "plugins",
            "check",
            "forgejo",
            "--dir",
            str(BIN),
            "--repository-url",
            str(bare),
            "--path",
            FULL_NAME,
            "--setting",
            f"url={forgejo.url}",
            "--secret-env",
            f"token={TOKEN_ENV}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "16/16 passed; not offered: events, own writes known in events" in out  # reviews too
    assert "pass  outage answered unavailable" in out
    assert TOKEN not in out


def test_a_wrong_token_fails_the_kit_with_an_auth_error(
    forgejo: FakeForgejo, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    plugin = ExternalPlugin(
        name="forgejo",
        directory=str(BIN),
        settings={"url": forgejo.url},
        secrets={"token": SecretRef(fromEnv=TOKEN_ENV)},
    )
    repo = Repository(name="scratch", url=str(bare), scm_provider="forgejo", path=FULL_NAME)
    report = run_conformance(plugin, Scratch(repo, str(bare)), state_dir=str(tmp_path / "s"))
    assert not report.ok
    failed = next(c for c in report.checks if c.passed is False)
    assert failed.name == "open"
    assert "ScmAuthError" in failed.detail
    assert "not-the-token" not in report.table()


def test_the_kit_pushes_with_the_plugins_credentials_as_the_forgejo_guide_runs_it(
    forgejo: FakeForgejo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    url = f"{forgejo.url}/{FULL_NAME}.git"  # git over HTTP, which wants the token
    anonymous = subprocess.run(
        ["git", "ls-remote", url],
        capture_output=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    assert anonymous.returncode != 0  # the fake's git refuses a push or fetch without it
    code = main(
        [
            "plugins",
            "check",
            "forgejo",
            "--dir",
            str(BIN),
            "--repository-url",
            url,
            "--path",
            FULL_NAME,
            "--setting",
            f"url={forgejo.url}",
            "--secret-env",
            f"token={TOKEN_ENV}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "pass  git credentials" in out and "pass  open" in out
    assert TOKEN not in out


def test_plugins_list_shows_the_forgejo_plugins_version_though_it_is_given_no_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugins", "list", "--dir", str(BIN)]) == 0
    rows = {row.split()[0]: row.split() for row in capsys.readouterr().out.splitlines()[1:]}
    assert rows["forgejo"][1:3] == [VERSION, "promoter.scm/v1.1"]
    bare = ExternalPlugin(name="forgejo", directory=str(BIN))  # as `plugins list` starts it
    host = ExternalScm(provider=ScmProvider(name="bare", plugin=bare), state_dir=str(tmp_path))
    repo = Repository(name="scratch", url=str(tmp_path), scm_provider="bare", path=FULL_NAME)
    try:
        with pytest.raises(PluginError, match=r"settings\.url must be the Forgejo/Gitea URL"):
            host.find_open_pull_request(repo=repo, head="a", base="b")  # its calls: refused
    finally:
        host.close()
