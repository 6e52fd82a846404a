"""The ``promoter`` command line: the table of commands, and ``main``.

Each command is a row of ``COMMANDS`` (``promoter.cli.commands.Command``): its name, the
line ``promoter --help`` shows, its arguments and what it runs. The daemon's commands
live in ``serve`` and ``status``, those that ask a running daemon in ``remote``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from promoter.cli import notify, remote, serve, status
from promoter.cli.commands import PATH, Command, build_parser, chosen
from promoter.errors import ConfigError, PromoterError

EXIT_INVALID = 2
DESCRIPTION = """\
Moves GitOps changes from one environment to the next by pull request, merging
only when the change's checks and the previous environment's health allow it.

Start with "promoter demo", then "promoter validate promoter.yaml" and
"promoter serve --config promoter.yaml"; "promoter COMMAND --help" tells more."""


# --- validate, schema ------------------------------------------------------------------


def validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar=PATH, help="the promoter.yaml to check")
    p.add_argument(
        "--offline",
        action="store_true",
        help="check the file only: no secret read, "
        "no repository or plugin looked for (what serve also checks)",
    )


SECRETS = (".fromEnv: ", ".fromFile: ")
"""How a secret that cannot be read here is named in a problem."""


def cmd_validate(args: argparse.Namespace) -> int:
    from promoter.config.loader import config_warnings, load_config
    from promoter.wiring import load_checked

    try:
        config = load_config(args.file) if args.offline else load_checked(args.file)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        secrets = not args.offline and any(s in p for p in exc.problems for s in SECRETS)
        hint = "; secrets are read here as serve reads them (--offline: the file alone)"
        count = f"{args.file}: {len(exc.problems)} problem(s)"
        print(count + (hint if secrets else ""), file=sys.stderr)
        return EXIT_INVALID
    print(
        f"{args.file}: ok ({len(config.promotion_strategies)} strategies, "
        f"{len(config.repositories)} repositories)"
    )
    for warning in config_warnings(config):
        print(f"{args.file}: warning: {warning}", file=sys.stderr)
    return 0


def schema_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plugin-protocol",
        action="store_true",
        help="print the JSON Schemas of the plugin protocol promoter.scm/v1.1 instead",
    )


def cmd_schema(args: argparse.Namespace) -> int:
    from promoter.config.loader import json_schema

    if args.plugin_protocol:
        from promoter.wiring import print_plugin_protocol_schema

        return print_plugin_protocol_schema()

    print(json.dumps(json_schema(), indent=2))
    return 0


def plugins_arguments(p: argparse.ArgumentParser) -> None:
    from promoter.wiring import add_plugin_arguments

    add_plugin_arguments(p)


def cmd_plugins(args: argparse.Namespace) -> int:
    """Replaced by the chosen subcommand's own ``func`` (``plugins list|check``)."""
    raise AssertionError("unreachable: argparse requires a plugins subcommand")


# --- hydrate, demo ---------------------------------------------------------------------


def hydrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", required=True, metavar=PATH, help="path of a local git repository")
    p.add_argument("--dry-ref", default="main", help="the dry branch or commit to render")
    p.add_argument(
        "--branch",
        action="append",
        required=True,
        help="an environment's active branch; repeat for each environment",
    )
    p.add_argument("--suffix", default="-next", help="the proposed branches' suffix")
    p.add_argument(
        "--source-dir",
        help="render this folder of the dry tree per environment, e.g. 'envs/{env}' "
        "({env} is the branch's last part, {branch} the whole branch; default: the whole tree)",
    )
    p.add_argument(
        "--metadata",
        choices=["file", "argocd", "note"],
        default="file",
        help="what names the dry commit: file and note, Argo CD's formats, or the note only",
    )
    p.add_argument("--push", metavar="REMOTE", help="then push them and the notes atomically")


def cmd_hydrate(args: argparse.Namespace) -> int:
    from promoter.cli.hydrate import hydrate

    results = hydrate(
        repo=Path(args.repo),
        dry_ref=args.dry_ref,
        branches=args.branch,
        suffix=args.suffix,
        source_dir=args.source_dir,
        metadata=args.metadata,
        push_to=args.push,
    )
    for branch, result in results.items():
        what = "note only (no change)" if result.noop else "new commit"
        print(f"{branch}{args.suffix}: {result.sha[:7]} <- dry {result.dry_sha[:7]} ({what})")
    if args.push:
        print(f"pushed to {args.push}")
    return 0


def demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scripted", action="store_true", help="run unattended, exit 0 on success")
    p.add_argument("--port", type=int, default=0, help="the daemon's port; 0 picks a free one")
    p.add_argument("--dir", metavar=PATH, help="sandbox directory (default: a new temporary one)")


def cmd_demo(args: argparse.Namespace) -> int:
    from promoter.cli.demo import run_demo

    return run_demo(scripted=args.scripted, port=args.port, workdir=args.dir)


# --- crds ------------------------------------------------------------------------------


def crds_arguments(p: argparse.ArgumentParser) -> None:
    from promoter.kube import crds_arguments as kube_arguments

    kube_arguments(p)


def cmd_crds(args: argparse.Namespace) -> int:
    from promoter.kube import cmd_crds as kube_crds

    return kube_crds(args)


# --- completion --------------------------------------------------------------------------


def completion_arguments(p: argparse.ArgumentParser) -> None:
    from promoter.cli.completion import SHELLS

    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def cmd_completion(args: argparse.Namespace) -> int:
    from promoter.cli.completion import script

    print(script(parser(), args.shell), end="")
    return 0


COMMANDS: list[Command] = [
    Command(
        "serve",
        "run the daemon: webhooks, API, metrics",
        serve.arguments,
        serve.run,
        description=serve.DESCRIPTION,
    ),
    Command(
        "demo",
        "a local sandbox: a change goes dev -> staging -> prod",
        demo_arguments,
        cmd_demo,
    ),
    Command(
        "status",
        "a table of every strategy and environment",
        status.arguments,
        status.run,
        description=status.DESCRIPTION,
    ),
    Command(
        "validate",
        "check a config file; exit 2 listing every problem",
        validate_arguments,
        cmd_validate,
    ),
    Command("schema", "print the JSON Schema of promoter.yaml", schema_arguments, cmd_schema),
    Command(
        "plugins",
        "out-of-process SCM plugins: list them, check one",
        plugins_arguments,
        cmd_plugins,
    ),
    Command(
        "hydrate",
        "render the dry branch onto each <env>-next branch (demos and tests)",
        hydrate_arguments,
        cmd_hydrate,
    ),
    *remote.commands(),
    *notify.COMMANDS,
    Command(
        "crds",
        "write the Kubernetes CRDs generated from the models (docs/kubernetes.md)",
        crds_arguments,
        cmd_crds,
    ),
    Command(
        "completion",
        "print a shell completion script (bash or zsh)",
        completion_arguments,
        cmd_completion,
        description="Print a shell completion script generated from the commands.\n\n"
        "bash: add  source <(promoter completion bash)  to ~/.bashrc\n"
        "zsh:  add  source <(promoter completion zsh)   to ~/.zshrc",
    ),
]


def promoter_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("promoter")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given ``argv``, with the arguments of its command alone."""
    return build_parser(
        COMMANDS,
        prog="promoter",
        description=DESCRIPTION,
        version=promoter_version,
        only=False if argv is None else chosen(COMMANDS, argv),
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser(argv).parse_args(argv)
    try:
        result: int = args.func(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    except PromoterError as exc:
        print(f"promoter: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return result
