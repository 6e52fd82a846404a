"""Structured logs: a fixed message plus key/value fields, as JSON lines in the daemon.

Use ``log.info("pr opened", extra={"strategy": s, "environment": e, "pr": n})``.
The fields of the work in hand come from the log context: within
``with log_context(strategy=s, reconcile_id=r):`` every line of this thread (or asyncio
task) carries them too, and a nested block adds its own; a field given in ``extra`` wins.
The context is read when a line is formatted, which the daemon's handler does at once,
in the thread that logs it.

Every record is scrubbed of known secrets before it is formatted
(``promoter.redaction.RedactingFilter``), and so are the context's values; uvicorn's
``color_message`` (the same message with ANSI colours) is left out.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from promoter.redaction import RedactingFilter, scrub

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's copy of the message, with ANSI escapes
}

_CONTEXT: ContextVar[Mapping[str, Any]] = ContextVar(
    "promoter_log_context", default=MappingProxyType({})
)


class LogContext:
    """``with log_context(...)``: a class, not a generator, for the webhook's hot path."""

    __slots__ = ("_fields", "_token")

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __enter__(self) -> None:
        outer = _CONTEXT.get()  # none, for a webhook's request: its fields as they are
        self._token = _CONTEXT.set({**outer, **self._fields} if outer else self._fields)

    def __exit__(self, *exc: object) -> None:
        _CONTEXT.reset(self._token)


def log_context(**fields: Any) -> LogContext:
    """Within the block, every log line carries ``fields`` besides the outer block's
    (a field given again replaces the outer value; ``None`` leaves a field out).
    Leaving the block, by its end or an exception, restores the outer context."""
    return LogContext({k: v for k, v in fields.items() if v is not None})


def current_context() -> Mapping[str, Any]:
    """The fields the log context adds to a line logged here and now."""
    return _CONTEXT.get()


def reconcile_context(strategy: str) -> LogContext:
    """The log context of one reconcile of ``strategy``: its name and a fresh reconcile id,
    or the id already open for a reconcile of the same strategy (the worker opens it, the
    reconciler joins it, so the worker's own lines about the reconcile carry it too)."""
    outer = _CONTEXT.get()
    reconcile_id = outer.get("reconcile_id") if outer.get("strategy") == strategy else None
    return log_context(strategy=strategy, reconcile_id=reconcile_id or uuid.uuid4().hex[:12])


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields of a line: the log context's, then the record's own ``extra`` ones."""
    own = {k: v for k, v in vars(record).items() if k not in _RESERVED}
    context = _CONTEXT.get()
    if not context:
        return own
    return {k: scrub(v) if isinstance(v, str) else v for k, v in context.items()} | own


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
