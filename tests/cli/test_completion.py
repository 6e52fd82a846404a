"""Shell completion generated from the parser: commands, options, choices and paths, in bash."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from promoter.cli.main import COMMANDS, main


def script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(script_path: Path, cwd: Path, *words: str) -> list[str]:
    """What bash offers for the command line ``words`` (the last one being typed)."""
    line = " ".join(shlex.quote(w) for w in words)
    program = (
        f"source {shlex.quote(str(script_path))}\n"
        f"COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); _promoter\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return [w for w in result.stdout.splitlines() if w]


@pytest.fixture
def bash_completion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "completion.bash"
    path.write_text(script("bash", capsys))
    return path


def test_bash_completes_every_command(bash_completion: Path, tmp_path: Path) -> None:
    offered = complete(bash_completion, tmp_path, "promoter", "")
    assert {c.name for c in COMMANDS} <= set(offered)
    assert complete(bash_completion, tmp_path, "promoter", "se") == ["serve", "set-status"]


def test_bash_completes_options_choices_and_paths(bash_completion: Path, tmp_path: Path) -> None:
    (tmp_path / "promoter.yaml").write_text("")
    assert "--reason" in complete(bash_completion, tmp_path, "promoter", "hold", "--")
    phases = complete(bash_completion, tmp_path, "promoter", "set-status", "r", "s", "k", "")
    assert {"pending", "success", "failure"} <= set(phases)
    assert complete(bash_completion, tmp_path, "promoter", "serve", "--config", "pro") == [
        "promoter.yaml"
    ]
    assert complete(bash_completion, tmp_path, "promoter", "validate", "pro") == ["promoter.yaml"]
    assert complete(bash_completion, tmp_path, "promoter", "completion", "z") == ["zsh"]


def test_the_zsh_script_loads_the_same_function_through_bashcompinit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    zsh, bash = script("zsh", capsys), script("bash", capsys)
    assert "bashcompinit" in zsh
    assert bash.split("_promoter_paths() {", 1)[1] in zsh
