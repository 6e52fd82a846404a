"""``promoter serve``: the daemon under uvicorn, until SIGTERM or Ctrl-C.

A SIGTERM ends it cleanly: uvicorn stops taking requests, the runtime finishes the
reconciles in flight, and the process exits 0 (uvicorn would otherwise re-raise the
signal after its shutdown, and the process would end "killed by SIGTERM").
"""

from __future__ import annotations

import argparse
import logging
import signal
from types import FrameType

from promoter.cli.commands import PATH
from promoter.errors import ConfigError

DESCRIPTION = """\
Run the daemon: webhook receivers, the API, /healthz, /readyz and /metrics.

Every secret of the configuration is read at start; a missing, empty or blank one
stops it with its file:line. SIGTERM or Ctrl-C stops it cleanly: no new request,
the reconciles in flight finish (up to 60 s), then exit 0 (130 after Ctrl-C)."""

GRACE_SECONDS = 60
"""How long a SIGTERM waits for requests and reconciles in flight."""


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        metavar=PATH,
        help="the promoter.yaml to serve (with --kubernetes: its daemon and webhooks only)",
    )
    p.add_argument("--host", help="listen on this address instead of daemon.host")
    p.add_argument("--port", type=int, help="listen on this port instead of daemon.port")
    p.add_argument(
        "--state-dir", metavar=PATH, help="use this directory instead of daemon.stateDir"
    )
    p.add_argument("--plain-logs", action="store_true", help="key=value logs instead of JSON lines")
    from promoter.kube import add_serve_arguments

    add_serve_arguments(p)


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM outside uvicorn's own handling (before it starts, or re-raised after a
    graceful shutdown): leave with status 0."""
    raise SystemExit(0)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from promoter import logs
    from promoter.config import Config
    from promoter.config.loader import config_warnings
    from promoter.http import uvicorn_options
    from promoter.kube import serve_kubernetes
    from promoter.wiring import Daemon, load_checked

    if args.config is None and not args.kubernetes:
        raise ConfigError(["serve needs --config (or --kubernetes)"])
    config = load_checked(args.config) if args.config else Config()
    overrides = {"state_dir": args.state_dir, "host": args.host, "port": args.port}
    daemon_settings = config.daemon.model_copy(
        update={k: v for k, v in overrides.items() if v is not None}
    )
    config = config.model_copy(update={"daemon": daemon_settings})
    logs.setup(config.daemon.log_level, json_lines=not args.plain_logs)
    for warning in [] if args.kubernetes else config_warnings(config):
        logging.getLogger("promoter.serve").warning("config warning", extra={"warning": warning})
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        if args.kubernetes:
            return serve_kubernetes(args, config)
        daemon = Daemon(config)
        uvicorn.run(
            daemon.app,
            **uvicorn_options(host=config.daemon.host, port=config.daemon.port),
            timeout_graceful_shutdown=GRACE_SECONDS,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
