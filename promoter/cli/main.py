"""The ``promoter`` command line: serve, demo, status, validate, schema, hydrate, set-status."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from promoter.errors import ConfigError, PromoterError

EXIT_INVALID = 2


def _load(
    path: str, *, state_dir: str | None = None, host: str | None = None, port: int | None = None
) -> object:
    from promoter.config.loader import load_config

    config = load_config(path)
    daemon = config.daemon.model_copy(
        update={
            k: v
            for k, v in {"state_dir": state_dir, "host": host, "port": port}.items()
            if v is not None
        }
    )
    return config.model_copy(update={"daemon": daemon})


def cmd_validate(args: argparse.Namespace) -> int:
    from promoter.config.loader import load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{args.file}: {len(exc.problems)} problem(s)", file=sys.stderr)
        return EXIT_INVALID
    print(
        f"{args.file}: ok ({len(config.promotion_strategies)} strategies, "
        f"{len(config.repositories)} repositories)"
    )
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from promoter.config.loader import json_schema

    if args.plugin_protocol:
        from promoter.wiring import print_plugin_protocol_schema

        return print_plugin_protocol_schema()

    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from promoter import logs
    from promoter.config import Config
    from promoter.wiring import Daemon

    config = _load(args.config, state_dir=args.state_dir, host=args.host, port=args.port)
    assert isinstance(config, Config)
    logs.setup(config.daemon.log_level, json_lines=not args.plain_logs)
    daemon = Daemon(config)
    uvicorn.run(
        daemon.app,
        host=config.daemon.host,
        port=config.daemon.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=60,
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from promoter.cli import status_table

    if args.url:
        from promoter.cli.client import ApiClient

        client = ApiClient(args.url)
        try:
            strategies = client.strategies()
        finally:
            client.close()
    else:
        from promoter.config import Config
        from promoter.daemon import Runtime
        from promoter.http import strategy_json
        from promoter.wiring import build_plugins

        config = _load(args.config, state_dir=args.state_dir)
        assert isinstance(config, Config)
        runtime = Runtime(config, plugins=build_plugins(config))
        try:
            strategies = [
                strategy_json(s, runtime.reconciler.preview(s.name))
                for s in config.promotion_strategies
            ]
        finally:
            runtime.stop()
            for plugin in runtime.plugins.values():
                plugin.close()
    if args.json:
        print(json.dumps(strategies, indent=2))
    else:
        print(status_table.render(strategies))
    return 0


def cmd_set_status(args: argparse.Namespace) -> int:
    from promoter.cli.client import ApiClient

    client = ApiClient(args.url)
    try:
        result = client.set_status(
            args.repository,
            args.sha,
            key=args.key,
            phase=args.phase,
            description=args.description,
            url=args.target_url,
        )
    finally:
        client.close()
    print(f"{args.key}={args.phase} on {args.sha[:7]}; woke {', '.join(result['enqueued']) or '-'}")
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    from promoter.cli.client import ApiClient

    client = ApiClient(args.url)
    try:
        result = client.refresh(args.strategy)
    finally:
        client.close()
    print("refreshing " + ", ".join(result["enqueued"]))
    return 0


def cmd_operate(args: argparse.Namespace) -> int:
    from promoter.cli.client import ApiClient

    body = {
        "environment": args.environment,
        "reason": getattr(args, "reason", None),
        "to": getattr(args, "to", None),
        "drySha": getattr(args, "dry_sha", None),
        "user": getattr(args, "user", None),
    }
    client = ApiClient(args.url)
    try:
        result = client.operate(args.strategy, args.command, **body)
    finally:
        client.close()
    print(json.dumps(result, indent=2))
    return 0


def cmd_hydrate(args: argparse.Namespace) -> int:
    from promoter.cli.hydrate import hydrate

    results = hydrate(
        repo=Path(args.repo),
        dry_ref=args.dry_ref,
        branches=args.branch,
        suffix=args.suffix,
        source_dir=args.source_dir,
    )
    for branch, result in results.items():
        what = "note only (no change)" if result.noop else "new commit"
        print(f"{branch}{args.suffix}: {result.sha[:7]} <- dry {result.dry_sha[:7]} ({what})")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from promoter.cli.demo import run_demo

    return run_demo(scripted=args.scripted, port=args.port, workdir=args.dir)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="promoter", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the daemon")
    s.add_argument("--config", required=True)
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--state-dir")
    s.add_argument("--plain-logs", action="store_true", help="key=value logs instead of JSON")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("demo", help="a local sandbox: a change goes dev -> staging -> prod")
    s.add_argument("--scripted", action="store_true", help="run unattended, exit 0 on success")
    s.add_argument("--port", type=int, default=0, help="0 picks a free port")
    s.add_argument("--dir", help="sandbox directory (default: a new temporary one)")
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("status", help="a table of every strategy and environment")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--config")
    src.add_argument("--url", help="a running daemon, e.g. http://127.0.0.1:8080")
    s.add_argument("--state-dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("validate", help="check a config file; exit 2 listing every problem")
    s.add_argument("file")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("schema", help="print the JSON Schema of promoter.yaml")
    s.add_argument("--plugin-protocol", action="store_true", help="of promoter.scm/v1 instead")
    s.set_defaults(func=cmd_schema)

    from promoter.wiring import add_plugin_commands

    add_plugin_commands(sub)

    s = sub.add_parser("hydrate", help="render the dry branch onto each <env>-next branch")
    s.add_argument("--repo", required=True, help="path of a local git repository")
    s.add_argument("--dry-ref", default="main")
    s.add_argument("--branch", action="append", required=True, help="an environment branch")
    s.add_argument("--suffix", default="-next")
    s.add_argument("--source-dir", help="sub-folder per environment, e.g. 'envs/{env}'")
    s.set_defaults(func=cmd_hydrate)

    s = sub.add_parser("set-status", help="set a commit status through a running daemon")
    s.add_argument("repository")
    s.add_argument("sha")
    s.add_argument("key")
    s.add_argument("phase", choices=["pending", "success", "failure"])
    s.add_argument("--description", default="")
    s.add_argument("--target-url", default="")
    s.add_argument("--url", default="http://127.0.0.1:8080")
    s.set_defaults(func=cmd_set_status)

    operations = {
        "revert": "open a revert PR to the last healthy commit (or --to DRY_SHA)",
        "hold": "hold a dry SHA out of an environment and every later one",
        "release": "release holds (all, or --dry-sha) and un-pause an environment",
        "promote": "break glass: merge now past every gate but never-backwards",
        "approve": "approve an environment's open PR (local SCM; GitHub/GitLab use their UI)",
    }
    for name, text in operations.items():
        s = sub.add_parser(name, help=text)
        s.add_argument("strategy")
        s.add_argument("environment", help="its branch, or the branch's last part (dev)")
        if name == "revert":
            s.add_argument("--to", help="a dry SHA the ledger recorded as healthy")
        if name in ("hold", "release"):
            s.add_argument("--dry-sha", help="default: what is proposed now (hold), all (release)")
        if name in ("hold", "promote"):
            s.add_argument("--reason", required=True)
        if name == "approve":
            s.add_argument("--user", default=os.environ.get("USER") or "promoter-cli")
        s.add_argument("--url", default="http://127.0.0.1:8080")
        s.set_defaults(func=cmd_operate)

    s = sub.add_parser("refresh", help="ask a running daemon to reconcile now")
    s.add_argument("--strategy")
    s.add_argument("--url", default="http://127.0.0.1:8080")
    s.set_defaults(func=cmd_refresh)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
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
