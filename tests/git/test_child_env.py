"""The git processes' environment: its base built once while the process environment is
watched, rebuilt when it changes, built for every command while it cannot be told
unchanged, the caller's variables never kept, and always what building it anew would
give."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter import tuning
from promoter.git import child_env as module
from promoter.git.child_env import MAX_ENTRIES, child_env
from promoter.git.credentials import noninteractive_env
from promoter.git.runner import run_git


def fresh(env: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """What the environment is, built anew."""
    return {**(os.environ if base is None else base), **noninteractive_env(), **(env or {})}


@pytest.fixture(autouse=True)
def watched() -> Iterator[None]:
    """The process environment watched, as the daemon's start sets it (once a process)."""
    tuning.watch_environment()
    yield


def test_the_base_is_built_once_and_every_environment_is_what_building_gives() -> None:
    assert child_env() is child_env()
    first = child_env({"GIT_ASKPASS": "/askpass"})
    assert first == fresh({"GIT_ASKPASS": "/askpass"})
    assert child_env({"GIT_ASKPASS": "/askpass"}) is not first  # a copy: never kept
    assert child_env({"GIT_ASKPASS": "/other"})["GIT_ASKPASS"] == "/other"
    assert child_env() == fresh()
    base = {"PATH": os.environ.get("PATH", ""), "GIT_AUTHOR_NAME": "Promoter"}
    assert child_env(None, base) == fresh(None, base)


def test_the_caller_s_variables_win_over_the_base_and_the_non_interactive_ones() -> None:
    assert child_env({"GIT_TERMINAL_PROMPT": "1"})["GIT_TERMINAL_PROMPT"] == "1"
    assert child_env({"HOME": "/elsewhere"}, {"HOME": "/home"})["HOME"] == "/elsewhere"


def test_a_change_of_the_process_environment_is_seen_by_the_next_git_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    probe = ["config", "--get", "promoter.probe"]
    status, _, _ = run_git(probe, cwd=tmp_path, ok=(0, 1))
    assert status == 1  # not set: the environment of this first command is now kept
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


def test_the_kept_bases_are_bounded_and_the_caller_s_variables_not_kept() -> None:
    for n in range(MAX_ENTRIES + 20):
        child_env({"PROMOTER_SECRET": f"token-{n}"}, {"PROMOTER_PROBE": str(n)})
    assert len(module._built) <= MAX_ENTRIES
    assert not any("PROMOTER_SECRET" in kept for kept in module._built.values())
    assert child_env(None, {"PROMOTER_PROBE": "1"})["PROMOTER_PROBE"] == "1"


def test_without_a_watch_on_the_process_environment_the_base_is_built_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tuning, "environment_version", lambda: None)
    first = child_env()
    assert child_env() is not first
    assert child_env() == first == fresh()


def test_a_change_under_way_is_not_taken_for_no_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the audit event of a write to ``os.environ`` and the write itself, nothing
    is kept: once it shows, the base has the new variable."""
    monkeypatch.delenv("PROMOTER_PROBE", raising=False)
    kept = child_env()
    assert child_env() is kept
    sys.audit("os.putenv", os.fsencode("PROMOTER_PROBE"), os.fsencode("seen"))
    assert child_env() is not child_env()
    assert "PROMOTER_PROBE" not in child_env()
    monkeypatch.setenv("PROMOTER_PROBE", "seen")
    assert child_env() is child_env()
    assert child_env()["PROMOTER_PROBE"] == "seen"


def test_the_base_is_kept_however_os_environ_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """No private attribute of CPython's ``os.environ`` is needed to keep the base: here
    a plain dictionary, as another interpreter may have."""
    monkeypatch.setattr(os, "environ", dict(os.environ))
    assert child_env() is child_env()
    assert child_env() == fresh()
