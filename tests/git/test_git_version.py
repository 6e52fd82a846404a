"""The git on the PATH is checked when the daemon starts: missing or older than 2.38 is
refused with what to install, before any merge would fail with git's usage text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from promoter.cli.sandbox import sandbox_config
from promoter.errors import ConfigError
from promoter.git.process import version
from promoter.git.process.version import MINIMUM, parse, require_git
from promoter.wiring import Daemon
from tests import processes
from tests.support import GitOpsRepo, local_config

REAL_GIT = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()


def fake_git(directory: Path, says: str) -> str:
    """A ``PATH`` whose first ``git`` answers ``--version`` with ``says`` and runs the real
    git otherwise."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "{says}"; exit 0; fi\n'
        f'exec {REAL_GIT} "$@"\n'
    )
    script.chmod(0o755)
    return f"{directory}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize(
    ("said", "found"),
    [
        ("git version 2.39.5", (2, 39)),
        ("git version 2.45.1 (Apple Git-154)", (2, 45)),
        ("git version 2.44.0.windows.1", (2, 44)),
        ("git version 3.0.0", (3, 0)),
        ("git version 2.34.1\n", (2, 34)),
        ("usage: git [-v | --version]", None),
        ("", None),
    ],
)
def test_the_version_is_read_from_what_git_prints(said: str, found: tuple[int, int] | None) -> None:
    assert parse(said) == found


def test_the_git_this_machine_runs_is_new_enough() -> None:
    assert parse(require_git()) >= MINIMUM  # type: ignore[operator]


@pytest.mark.parametrize("said", ["git version 2.34.1", "git version 2.9.5", "no version"])
def test_an_old_or_unknown_git_is_refused_with_what_to_install(
    said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", said))
    with pytest.raises(ConfigError) as refused:
        require_git()
    assert "git 2.38 or newer" in str(refused.value)
    assert said in str(refused.value)


def test_no_git_on_the_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="git was not found on the PATH"):
        require_git()


def test_a_git_found_new_enough_is_asked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(version, "_checked", {})  # this test's answers go with it
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", fake_git(bin_dir, "git version 2.40.0"))
    assert require_git() == "git version 2.40.0"
    (bin_dir / "git").write_text("#!/bin/sh\nexit 1\n")  # not asked again
    assert require_git() == "git version 2.40.0"


def test_the_daemon_does_not_start_on_an_old_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(gitops.path, tmp_path / "state")
    monkeypatch.setenv(
        "PATH",
        fake_git(tmp_path / "bin", "git version 2.34.1"),
    )
    with pytest.raises(ConfigError, match="too old"):
        Daemon(config)
    assert not (tmp_path / "state" / "mirrors").exists()  # refused before any clone


def test_serve_says_so_and_exits_2(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    path = tmp_path / "promoter.yaml"
    path.write_text(sandbox_config(gitops.path, tmp_path / "state", daemon={"port": 0}))
    env = {
        **os.environ,
        "PATH": fake_git(tmp_path / "bin", "git version 2.34.1"),
    }
    served = processes.run(
        [sys.executable, "-m", "promoter.cli", "serve", "--config", str(path)],
        text=True,
        timeout=60,
        env=env,
    )
    assert served.returncode == 2, served.stderr
    assert "Traceback" not in served.stderr
    assert "git version 2.34.1, too old: the promoter needs git 2.38 or newer" in served.stderr
