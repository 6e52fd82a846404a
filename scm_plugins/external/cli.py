"""``promoter plugins list|check`` and ``promoter schema --plugin-protocol``.

``plugins list`` shows the plugins built in (and those of the ``promoter.scm_plugins``
entry points), then every ``promoter-scm-*`` executable found with its version and protocol.

``add_commands(subparsers)`` adds the ``plugins`` command to the promoter's parser;
``print_protocol_schema()`` serves ``schema --plugin-protocol``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from promoter.config import ExternalPlugin, Repository, SecretRef
from promoter.errors import ConfigError, PromoterError
from scm_plugins.external.conformance.kit import run_conformance
from scm_plugins.external.discovery import discover
from scm_plugins.external.host import ExternalScm
from scm_plugins.external.scratch import Scratch, init_bare
from scm_plugins.registry import builtins


def promoter_version() -> str:
    try:
        return version("promoter")
    except PackageNotFoundError:
        return "?"


def print_protocol_schema() -> int:
    from scm_plugins.external.schema import protocol_schema

    print(json.dumps(protocol_schema(), indent=2))
    return 0


def _pairs(values: list[str], what: str) -> dict[str, str]:
    found = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise ConfigError([f"{what} must be KEY=VALUE, got {value!r}"])
        found[key] = rest
    return found


def _spec(args: argparse.Namespace, name: str | None) -> ExternalPlugin:
    settings: dict[str, Any] = _pairs(args.setting, "--setting")
    secrets = {k: SecretRef(from_env=v) for k, v in _pairs(args.secret_env, "--secret-env").items()}
    command = shlex.split(args.command) if args.command else None
    return ExternalPlugin(
        name=None if command else name,
        command=command,
        directory=args.dir[0] if args.dir else None,
        settings=settings,
        secrets=secrets,
        timeout=args.timeout,
    )


def cmd_list(args: argparse.Namespace) -> int:
    print(f"{'NAME':<22} {'VERSION':<10} {'PROTOCOL':<18} PATH")
    for name, target in builtins().items():  # in process: the promoter's own version
        print(f"{name:<22} {promoter_version():<10} {'built-in':<18} {target}")
    found = discover(directories=args.dir, environ=os.environ)
    if not found:
        print("no promoter-scm-* executable found")
        return 0
    with tempfile.TemporaryDirectory(prefix="promoter-plugins-") as tmp:
        for plugin in found:
            spec = ExternalPlugin(command=[str(plugin.path)], timeout=args.timeout)
            try:
                from promoter.config import ScmProvider

                host = ExternalScm(
                    provider=ScmProvider(name=plugin.name, plugin=spec), state_dir=tmp
                )
            except PromoterError as exc:
                print(f"{plugin.name:<22} {'?':<10} {'-':<18} {plugin.path}  ({exc})")
                continue
            info = host.info
            host.close()
            assert info is not None
            print(f"{info.name:<22} {info.version:<10} {info.protocol_version:<18} {plugin.path}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    spec = _spec(args, args.name)
    with tempfile.TemporaryDirectory(prefix="promoter-check-") as tmp:
        url = args.repository_url or str(init_bare(Path(tmp) / "scratch.git"))
        repo = Repository(
            name="scratch", url=url, scm_provider="conformance", path=args.path or None
        )
        scratch = Scratch(repo, args.git_url or url)
        report = run_conformance(spec, scratch, state_dir=str(Path(tmp) / "state"))
    print(report.table())
    return 0 if report.ok else 1


def add_commands(sub: Any) -> None:
    """Add ``plugins list`` and ``plugins check`` to the promoter's subparsers."""
    add_arguments(sub.add_parser("plugins", help="out-of-process SCM plugins: list, check"))


def add_arguments(plugins: argparse.ArgumentParser) -> None:
    """``list`` and ``check`` under the ``plugins`` command's parser."""
    psub = plugins.add_subparsers(
        title="subcommands",
        dest="plugins_command",
        metavar="SUBCOMMAND",
        required=True,
        help="list, or check one",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", action="append", default=[], help="look here before PATH")
    common.add_argument("--timeout", type=float, default=30.0, help="seconds per call")

    s = psub.add_parser(
        "list",
        parents=[common],
        help="every promoter-scm-* with its version, and the plugins built in",
    )
    s.set_defaults(func=cmd_list)

    s = psub.add_parser("check", parents=[common], help="run the conformance kit on a plugin")
    s.add_argument("name", help="the plugin's name (promoter-scm-NAME)")
    s.add_argument("--command", help="run this command line instead of finding NAME")
    s.add_argument("--repository-url", help="scratch repository (default: a new local one)")
    s.add_argument("--git-url", help="where git pushes scratch branches (default: the URL)")
    s.add_argument("--path", help="owner/name of the scratch repository on the SCM")
    s.add_argument("--setting", action="append", default=[], help="KEY=VALUE for initialize")
    s.add_argument(
        "--secret-env", action="append", default=[], help="KEY=ENVVAR: a secret read from ENVVAR"
    )
    s.set_defaults(func=cmd_check)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - convenience
    parser = argparse.ArgumentParser(prog="promoter")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
