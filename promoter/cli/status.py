"""``promoter status``: every strategy's environments, once or again and again (``--watch``).

With ``--url`` it asks a running daemon; with ``--config`` it reads the repositories
itself, without needing every secret: a provider whose secret is missing here shows
why on its strategies, the others show as usual.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any, TextIO

from promoter.cli import status_table
from promoter.cli.commands import PATH, add_client_arguments

DESCRIPTION = """\
A table of every strategy and environment: active and proposed dry commits, the
open PR, the state and why.

--url asks a running daemon. --config reads the repositories itself, acting on
nothing and needing no secret: a provider whose secret is missing here shows why
on its strategies."""

Strategies = list[dict[str, Any]]
CLEAR = "\033[H\033[2J"


def arguments(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", metavar=PATH, help="read the state with this promoter.yaml")
    source.add_argument("--url", help="ask a running daemon, e.g. http://127.0.0.1:8080")
    p.add_argument(
        "--state-dir", metavar=PATH, help="with --config: the state directory (default: its own)"
    )
    p.add_argument(
        "--watch", action="store_true", help="show the table again every --interval, until Ctrl-C"
    )
    p.add_argument("--interval", type=float, default=2.0, help="seconds between two --watch reads")
    add_client_arguments(p, url=False)


def run(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        read = _reader(args, stack)
        render = (lambda s: json.dumps(s, indent=2)) if args.json else status_table.render
        if not args.watch:
            print(render(read()))
            return 0
        return watch(read, render, interval=max(args.interval, 0.1))


def watch(
    read: Callable[[], Strategies],
    render: Callable[[Strategies], str],
    *,
    interval: float,
    out: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Print ``render(read())`` every ``interval`` seconds until Ctrl-C; 0 then."""
    out = out or sys.stdout
    try:
        while True:
            text = render(read())
            now = datetime.now(UTC).strftime("%H:%M:%S")
            if out.isatty():
                out.write(CLEAR)
            out.write(f"Every {interval:g}s: promoter status  ({now} UTC, Ctrl-C to stop)\n\n")
            out.write(text + "\n")
            out.flush()
            sleep(interval)
    except KeyboardInterrupt:
        out.write("\n")
        return 0


def _reader(args: argparse.Namespace, stack: ExitStack) -> Callable[[], Strategies]:
    if args.url:
        from promoter.cli.client import ApiClient

        client = ApiClient(args.url, token=args.token)
        stack.callback(client.close)
        return client.strategies
    from promoter.config.loader import load_config
    from promoter.daemon import Runtime
    from promoter.http import strategy_json
    from promoter.wiring import build_plugins

    config = load_config(args.config)  # no secret resolved just to read state
    if args.state_dir:
        daemon = config.daemon.model_copy(update={"state_dir": args.state_dir})
        config = config.model_copy(update={"daemon": daemon})
    runtime = Runtime(config, plugins=build_plugins(config, lenient=True))

    def close() -> None:
        runtime.stop()
        for plugin in runtime.plugins.values():
            plugin.close()

    stack.callback(close)

    def read() -> Strategies:
        return [
            strategy_json(s, runtime.reconciler.preview(s.name))
            for s in config.promotion_strategies
        ]

    return read
