"""Structured logs: a fixed message plus key/value fields, as JSON lines in the daemon.

Use ``log.info("pr opened", extra={"strategy": s, "environment": e, "pr": n})``.
Every record is scrubbed of known secrets before it is formatted
(``promoter.redaction.RedactingFilter``); uvicorn's ``color_message`` (the same message
with ANSI colours) is left out.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from promoter.redaction import RedactingFilter

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's copy of the message, with ANSI escapes
}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The extra fields attached to a record."""
    return {k: v for k, v in vars(record).items() if k not in _RESERVED}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(fields(record))
        if record.exc_info:
            out["exc"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class PlainFormatter(logging.Formatter):
    """``msg key=value ...`` for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in fields(record).items())
        text = f"{record.levelname.lower():7} {record.getMessage()}" + (
            f" {extra}" if extra else ""
        )
        if record.exc_info:
            text += "\n" + (record.exc_text or self.formatException(record.exc_info))
        return text


def setup(level: str = "info", *, json_lines: bool = True, stream: Any = None) -> None:
    """Configure the root logger once for the process."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else PlainFormatter())
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in ("apscheduler", "urllib3", "github", "git", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("github").handlers.clear()  # PyGithub's own plain stderr handler
