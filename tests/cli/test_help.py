"""``promoter --help`` lists every command; every option says what it does and its default."""

from __future__ import annotations

import argparse
import re

import pytest

from promoter.cli.commands import subcommands
from promoter.cli.main import COMMANDS, main, parser, promoter_version


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_the_top_help_lists_every_command_with_one_line_and_no_rst(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of(["--help"], capsys)
    assert "`" not in text
    listed = dict(re.findall(r"^    (\S+) +(\S.*)$", text, flags=re.MULTILINE))
    for command in COMMANDS:
        assert listed[command.name].startswith(command.summary.split()[0])
    assert set(listed) == {c.name for c in COMMANDS}


def test_every_command_has_help_with_every_option_explained(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, sub in subcommands(parser()).items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.dest} has no help"
            assert "`" not in action.help
        text = help_of([name, "--help"], capsys)
        assert "`" not in text
        for action in sub._actions:
            shown = action.default not in (None, False, "", [], argparse.SUPPRESS)
            if action.option_strings and shown:
                assert f"(default: {action.default})" in " ".join(text.split()), (name, action)


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert help_of(["--version"], capsys).strip() == f"promoter {promoter_version()}"
    assert promoter_version()[0].isdigit()
