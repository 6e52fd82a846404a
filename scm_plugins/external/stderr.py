"""A plugin's stderr: its log, each line a log line of the promoter's, within a bounded volume.

Each line becomes a record ``plugin log`` tagged with the provider, the plugin and its
pid; a JSON object line with ``level`` and ``msg`` keeps that level and its other
fields (prefixed ``plugin_``). A line is cut to ``LINE_SHOWN`` characters (a longer one
is read to its end and the rest dropped). At most ``BURST`` lines are logged at once
and ``RATE`` a second after that: the lines past it are counted (``stderr_dropped``) and
said once a minute, so a plugin that loops on an error cannot flood the promoter's log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import IO

from scm_plugins.external.accounting import LineAccount
from scm_plugins.windows import TokenBucket

log = logging.getLogger("promoter.plugins")

LINE_SHOWN = 4000
"""Characters of one stderr line kept in its log line."""
READ_LIMIT = 64 * 1024
"""Bytes of one stderr line read at most; the rest of a longer line is skipped."""
BURST = 200
RATE = 20.0
"""Lines a second logged once the burst is spent."""
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40}


def lines(stream: IO[bytes], limit: int = READ_LIMIT) -> Iterator[bytes]:
    """Each line of ``stream``, cut to ``limit`` bytes (the rest of a longer one skipped)."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(b"\n"):
            while (rest := stream.readline(limit)) and not rest.endswith(b"\n"):
                pass
        yield line


def parse(line: str) -> tuple[int, str, dict[str, object]]:
    """(level, text, fields) of one stderr line."""
    if line.startswith("{"):
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if isinstance(data, dict):
            level = _LEVELS.get(str(data.pop("level", "info")).lower(), logging.INFO)
            text = str(data.pop("msg", data.pop("message", "")))
            fields = {f"plugin_{k}": v for k, v in data.items() if isinstance(k, str)}
            return level, text, fields
    return logging.INFO, line, {}


def log_stderr(
    stream: IO[bytes],
    *,
    fields: Mapping[str, object],
    account: LineAccount,
) -> None:
    """Log each line of ``stream`` until it ends (run on the plugin's stderr thread)."""
    clock = account.clock
    bucket = TokenBucket(rate=RATE, capacity=BURST, now=clock())
    for raw in lines(stream):
        line = raw.decode("utf-8", errors="replace").rstrip()
        if not line:
            continue
        now = clock()
        if bucket.wait(1, now) > 0:
            account.note(
                "stderr_dropped",
                "plugin log lines dropped: more than the promoter logs",
                text=line,
                per_second=RATE,
            )
            continue
        bucket.take(1, now)
        level, text, extra = parse(line)
        log.log(level, "plugin log", extra={**fields, "line": text[:LINE_SHOWN], **extra})
