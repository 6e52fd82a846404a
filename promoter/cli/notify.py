"""``promoter notify test``: send one test notification to each configured sink, now.

Sent directly (not through the daemon's queue), so the answer of each receiver is shown;
exit 1 when any sink did not answer 2xx.
"""

from __future__ import annotations

import argparse

from promoter.cli.commands import PATH, Command


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["test"], help="test: send a test event to every sink")
    p.add_argument("--config", "-c", metavar=PATH, default="promoter.yaml", help="the config")
    p.add_argument("--sink", help="only this sink")


def run(args: argparse.Namespace) -> int:
    import httpx

    from promoter.config.loader import load_config
    from promoter.notify import Notification, render, send_once

    config = load_config(args.config)
    sinks = [s for s in config.notifications.sinks if args.sink in (None, s.name)]
    if not sinks:
        print("no notification sink configured" + (f" named {args.sink!r}" if args.sink else ""))
        return 1
    failed = 0
    for sink in sinks:
        n = Notification(
            event="test",
            strategy="promoter",
            environment="-",
            message=f"a test notification for sink {sink.name}",
        )
        try:
            response = send_once(sink, n.id, n.event, render(sink.format, n))
            outcome = f"HTTP {response.status_code}"
            ok = response.is_success
        except httpx.HTTPError as exc:
            outcome, ok = f"failed: {type(exc).__name__}", False
        failed += not ok
        print(f"{sink.name} ({sink.format}): {outcome}")
    return 1 if failed else 0


COMMANDS = [
    Command(
        "notify",
        "outbound notifications: send a test event to each sink",
        arguments,
        run,
        description="Send one test notification to each configured sink, now: directly,\n"
        "not through the daemon's queue, so each receiver's answer is shown.\n"
        "Exit 1 when any sink did not answer 2xx.",
    )
]
