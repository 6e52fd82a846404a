"""Framing of ``promoter.scm/v1``: one JSON-RPC 2.0 message per line (UTF-8, ``\\n``-terminated).

A message never contains a raw newline (JSON escapes them inside strings), so a
line is a whole message. A line longer than ``MAX_LINE`` is read to its end and refused
as one malformed line (its first KiB kept, to find the ``id`` it answers).
"""

from __future__ import annotations

import json
from typing import IO, Any

V1 = "promoter.scm/v1"
V1_1 = "promoter.scm/v1.1"
"""v1 plus, when both sides pick it: events (``events/subscribe`` and the plugin's
notifications), ``capabilities.events`` and ``expiresAt`` on git credentials."""
PROTOCOL = V1_1
SUPPORTED = (V1_1, V1)
"""Protocol versions this promoter speaks, most preferred first."""

MAX_LINE = 16 * 1024 * 1024


class FramingError(ValueError):
    """A line that is not one JSON-RPC message (``line``: the line, as read)."""

    def __init__(self, message: str, line: bytes = b"") -> None:
        super().__init__(message)
        self.line = line


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE:
        raise FramingError("message too long", line[:1024])
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise FramingError("not JSON", line) from exc
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise FramingError("not a JSON-RPC 2.0 message", line)
    return value


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message, None at end of stream; blank lines are skipped."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line:
            return None
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass  # the rest of a line too long to be a message: never a message itself
        if line.strip():
            return decode(line)


def request(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A message that wants no answer (no ``id``): a plugin's event."""
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result(ident: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": value}


def error(ident: Any, obj: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": obj}
