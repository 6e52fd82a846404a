"""``promoter freeze`` and ``promoter unfreeze``: stop every promotion of everything, a
strategy or one environment until lifted (reverts still go through), through a running
daemon's API, as the caller its token names (an ``admin``; docs/freezes.md)."""

from __future__ import annotations

import argparse
import json

from promoter.cli.client import ApiClient
from promoter.cli.commands import Command, add_client_arguments


def _arguments(p: argparse.ArgumentParser, *, freezing: bool) -> None:
    p.add_argument("strategy", nargs="?", help="only this strategy (default: everything)")
    p.add_argument("environment", nargs="?", help="only this environment of the strategy")
    if freezing:
        p.add_argument("--reason", required=True, help="why, shown on every PR it stops")
    add_client_arguments(p)


def _run(args: argparse.Namespace) -> int:
    body = {
        "strategy": args.strategy,
        "environment": args.environment,
        "reason": getattr(args, "reason", None),
    }
    client = ApiClient(args.url, token=args.token)
    try:
        result = client.post(f"/api/v1/{args.command}", {k: v for k, v in body.items() if v})
    finally:
        client.close()
    if args.json:
        print(json.dumps(result, indent=2))
    elif result["action"] == "frozen":
        print(f"Froze {result['scope']}: {result['reason']}. Reverts still go through.")
    else:
        print(f"Unfroze {result['scope']} (it was frozen: {result['reason']}).")
    return 0


COMMANDS = [
    Command(
        "freeze",
        "stop every promotion (everything, a strategy, an environment) until unfrozen",
        lambda p: _arguments(p, freezing=True),
        _run,
    ),
    Command(
        "unfreeze",
        "lift a freeze of the same scope",
        lambda p: _arguments(p, freezing=False),
        _run,
    ),
]
