"""``promoter validate`` refuses what ``promoter serve`` would refuse, with the same words:
secrets that do not resolve, local repositories that are missing or not git, plugins
that are not found, and an environment branch that is another's proposed branch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from promoter.cli.main import main
from tests.support import GitOpsRepo


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "promoter.yaml"
    path.write_text(text)
    return path


def validate(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["validate", *extra, str(path)])
    return code, capsys.readouterr().err


def strategy(repo: str) -> str:
    return (
        "promotionStrategies:\n"
        f"  - {{name: s, repository: {repo}, environments: [{{branch: environment/dev}}]}}\n"
    )


def test_a_secret_that_does_not_resolve_is_named_with_its_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMOTER_T_NO_TOKEN", raising=False)
    empty = tmp_path / "empty-secret"
    empty.write_text("\n")
    path = write(
        tmp_path,
        "scmProviders:\n"
        "  - name: gh\n"
        "    github:\n"
        "      token: {fromEnv: PROMOTER_T_NO_TOKEN}\n"
        "repositories: [{name: r, url: 'https://github.com/acme/gitops.git', scmProvider: gh}]\n"
        + strategy("r")
        + f"daemon: {{apiToken: {{fromFile: {empty}}}}}\n",
    )
    code, err = validate(path, capsys)
    assert code == 2
    assert f"{path}:4:15: scmProviders[0].github.token.fromEnv: environment variable " in err
    assert "PROMOTER_T_NO_TOKEN is not set" in err
    assert f"{path}:8:" in err and "daemon.apiToken.fromFile: the secret from file:" in err


def test_a_local_repository_that_is_missing_or_not_git_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    path = write(
        tmp_path,
        "scmProviders: [{name: l, local: {}}]\n"
        "repositories:\n"
        f"  - {{name: gone, url: {tmp_path / 'gone.git'}, scmProvider: l}}\n"
        f"  - {{name: plain, url: {plain}, scmProvider: l}}\n" + strategy("gone"),
    )
    code, err = validate(path, capsys)
    assert code == 2
    assert (
        f"{path}:3:18: repositories[0].url: no repository at {tmp_path / 'gone.git'}: "
        "the directory does not exist"
    ) in err
    assert f"{path}:4:19: repositories[1].url: {plain} is not a git repository" in err


def test_an_external_plugin_that_is_not_found_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    git = shutil.which("git")
    assert git is not None
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), str(Path(git).parent)]))
    gitops = GitOpsRepo.create(tmp_path)
    path = write(
        tmp_path,
        "scmProviders:\n"
        "  - {name: forge, plugin: {name: nosuch}}\n"
        "  - {name: other, plugin: {command: ./not-here}}\n"
        f"repositories: [{{name: r, url: {gitops.path}, scmProvider: forge}}]\n" + strategy("r"),
    )
    code, err = validate(path, capsys)
    assert code == 2
    assert (
        f"{path}:2:19: scmProviders[0].plugin: no SCM plugin executable promoter-scm-nosuch" in err
    )
    assert f"{path}:3:19: scmProviders[1].plugin: the plugin command ./not-here is not an" in err


def test_an_environment_branch_that_is_another_environments_proposed_branch_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    path = write(
        tmp_path,
        "scmProviders: [{name: l, local: {}}]\n"
        f"repositories: [{{name: r, url: {gitops.path}, scmProvider: l}}]\n"
        "promotionStrategies:\n"
        "  - name: s\n"
        "    repository: r\n"
        "    environments: [{branch: dev}, {branch: dev-next}]\n",
    )
    code, err = validate(path, capsys, "--offline")
    assert code == 2
    assert "environments[1].branch: environment branch 'dev-next' is the proposed branch" in err


def test_offline_checks_the_file_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "scmProviders: [{name: l, local: {}}]\n"
        f"repositories: [{{name: r, url: {tmp_path / 'gone.git'}, scmProvider: l}}]\n"
        + strategy("r"),
    )
    assert validate(path, capsys, "--offline")[0] == 0
    assert validate(path, capsys)[0] == 2


def test_serve_refuses_what_validate_refuses_with_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "scmProviders: [{name: l, local: {}}]\n"
        f"repositories: [{{name: r, url: {tmp_path / 'gone.git'}, scmProvider: l}}]\n"
        + strategy("r")
        + f"daemon: {{stateDir: {tmp_path / 'state'}, port: 0}}\n",
    )
    _, said_by_validate = validate(path, capsys)
    served = subprocess.run(
        [sys.executable, "-m", "promoter.cli", "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert served.returncode == 2
    assert "Traceback" not in served.stderr
    assert served.stderr.splitlines() == said_by_validate.splitlines()[:-1]


def test_the_readmes_validate_example_validates_as_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    lines = (root / "README.md").read_text().splitlines()
    examples = [
        line.split("#")[0].split()[1:]
        for line in lines
        if line.startswith("promoter validate") and "examples/" in line
    ]
    assert examples, "the README shows how to validate its example"
    for argv in examples:
        assert main(argv) == 0, capsys.readouterr().err
        assert "ok (1 strategies, 1 repositories)" in capsys.readouterr().out


def test_secrets_not_readable_here_point_to_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parents[2]
    for name in ("GITHUB_TOKEN", "GITHUB_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    code, err = validate(root / "examples" / "promoter.yaml", capsys)
    assert code == 2
    assert err.splitlines()[-1].endswith(
        "3 problem(s); secrets are read here as serve reads them (--offline: the file alone)"
    )
