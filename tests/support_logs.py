"""Captures the daemon's own log output (``promoter.logs.setup``) for one test."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from promoter import logs


@contextmanager
def daemon_logs(level: str = "debug", *, json_lines: bool = True) -> Iterator[io.StringIO]:
    """The root logger set up as ``promoter serve`` does, writing to the yielded buffer."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    buffer = io.StringIO()
    logs.setup(level, json_lines=json_lines, stream=buffer)
    try:
        yield buffer
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved_handlers:
            root.addHandler(handler)
        root.setLevel(saved_level)
