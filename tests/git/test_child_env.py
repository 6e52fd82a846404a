"""The git processes' environment: built for every command from the process environment
(or the caller's base), the non-interactive variables and the caller's own, so that a
change of the process environment is seen by the next command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from promoter.git.process.child_env import child_env
from promoter.git.process.credentials import noninteractive_env
from promoter.git.process.runner import run_git


def fresh(env: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """What the environment is, built anew."""
    return {**(os.environ if base is None else base), **noninteractive_env(), **(env or {})}


def test_every_environment_is_what_building_it_gives_and_never_the_same_object() -> None:
    first = child_env({"GIT_ASKPASS": "/askpass"})
    assert first == fresh({"GIT_ASKPASS": "/askpass"})
    assert child_env({"GIT_ASKPASS": "/askpass"}) is not first
    assert child_env({"GIT_ASKPASS": "/other"})["GIT_ASKPASS"] == "/other"
    assert child_env() == fresh()
    assert child_env() is not child_env()
    base = {"PATH": os.environ.get("PATH", ""), "GIT_AUTHOR_NAME": "Promoter"}
    assert child_env(None, base) == fresh(None, base)


def test_a_base_of_the_caller_s_own_keeps_its_ssh_command() -> None:
    base = {"PATH": os.environ.get("PATH", ""), "GIT_SSH_COMMAND": "ssh -i /local-key"}
    assert child_env(None, base)["GIT_SSH_COMMAND"] == "ssh -i /local-key"


def test_the_caller_s_variables_win_over_the_base_and_the_non_interactive_ones() -> None:
    assert child_env({"GIT_TERMINAL_PROMPT": "1"})["GIT_TERMINAL_PROMPT"] == "1"
    assert child_env({"HOME": "/elsewhere"}, {"HOME": "/home"})["HOME"] == "/elsewhere"


def test_a_change_of_the_process_environment_is_seen_by_the_next_git_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    probe = ["config", "--get", "promoter.probe"]
    status, _, _ = run_git(probe, cwd=tmp_path, ok=(0, 1))
    assert status == 1
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "promoter.probe")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "seen")
    status, out, _ = run_git(probe, cwd=tmp_path, ok=(0, 1))
    assert (status, out.strip()) == (0, "seen")
    monkeypatch.delenv("GIT_CONFIG_COUNT")
    status, _, _ = run_git(probe, cwd=tmp_path, ok=(0, 1))
    assert status == 1


def test_a_changed_ssh_command_changes_the_non_interactive_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    assert child_env()["GIT_SSH_COMMAND"] == "ssh -o BatchMode=yes"
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i /key")
    assert child_env()["GIT_SSH_COMMAND"] == "ssh -i /key"
