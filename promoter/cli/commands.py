"""The command table: each ``promoter`` command is one ``Command`` row.

A row names the command, gives the one line ``promoter --help`` shows, adds its
arguments, and runs it. Adding a command is adding a row; ``promoter --help``,
``promoter COMMAND --help`` and shell completion follow from the table.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_URL = "http://127.0.0.1:8080"
PATH = "PATH"
"""The metavar of every argument that names a file or directory (completed as a path)."""


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    """One line, for ``promoter --help``."""
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    """More, for ``promoter NAME --help``; the summary when empty."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; every option's default shown, unless it has none; the
    commands listed one per line, without a heading of their own."""

    def __init__(self, prog: str, **kwargs: object) -> None:
        kwargs.setdefault("max_help_position", 30)
        super().__init__(prog, **kwargs)  # type: ignore[arg-type]

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # listed two levels in
            longest = max((len(name) for name in action.choices), default=0)
            self._action_max_length = max(self._action_max_length, longest + 6)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if isinstance(action, argparse._SubParsersAction):
            text = text.split("\n", 1)[1]  # the "COMMAND" line above the list
        return text

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        shown = default not in (None, False, argparse.SUPPRESS, [], "")
        optional = bool(action.option_strings) or action.nargs in ("?", "*")
        if shown and optional and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def add_client_arguments(
    p: argparse.ArgumentParser, *, url: bool = True, json_output: bool = True
) -> None:
    """``--url``, ``--token`` and ``--json``: for commands that talk to a running daemon."""
    if url:
        p.add_argument(
            "--url",
            default=os.environ.get("PROMOTER_URL", DEFAULT_URL),
            help="the daemon's address; $PROMOTER_URL, when set, is the default",
        )
    p.add_argument(
        "--token",
        default=None,
        help="your API token: the daemon acts as its name (none needed on a loopback daemon"
        " without tokens; default: $PROMOTER_API_TOKEN)",
    )
    if json_output:
        p.add_argument("--json", action="store_true", help="print JSON, for scripts")


def version_action(version: Callable[[], str]) -> type[argparse.Action]:
    """``--version``, whose version is looked up only when it is asked for."""

    class Version(argparse.Action):
        def __init__(self, option_strings: Sequence[str], dest: str, **kw: Any) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

        def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kw: Any) -> None:
            parser._print_message(f"{parser.prog} {version()}\n", sys.stdout)
            parser.exit()

    return Version


def chosen(commands: Sequence[Command], argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (None if none is)."""
    names = {command.name for command in commands}
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in names else None


def build_parser(
    commands: Sequence[Command],
    *,
    prog: str,
    description: str,
    version: Callable[[], str],
    only: str | Literal[False] | None = False,
) -> argparse.ArgumentParser:
    """The parser of the whole command line, from the table.

    ``only``: build the arguments of that command alone (None: of none), so that a command
    loads what its own arguments need and no other's: ``promoter --help`` loads no command
    at all. Every command is listed either way; False builds them all (completion).
    """
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--version", action=version_action(version), help="show the version and exit"
    )
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND", required=True)
    for command in commands:
        p = sub.add_parser(
            command.name,
            help=command.summary,
            description=command.description or command.summary[0].upper() + command.summary[1:],
            formatter_class=HelpFormatter,
        )
        if only is False or only == command.name:
            command.arguments(p)
        p.set_defaults(func=command.run)
    return parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name (for completion and tests)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
