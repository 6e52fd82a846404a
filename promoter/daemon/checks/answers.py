"""Reading a gate backend's answer within its deadline: the body, bounded in time and in
size, its JSON, and the secrets a check needs (a missing one is named, never shown).

A body that trickles in byte by byte is cut at the deadline: socket timeouts alone
would let it run for as long as each byte comes before the last one's timeout.
"""

from __future__ import annotations

import json
import time
from typing import Any

import urllib3

from promoter.config.secrets import SecretRef
from promoter.daemon.checks.gate_calls import Garbage, Unreachable, clip
from promoter.errors import ConfigError

LIMIT = 32 * 1024 * 1024
"""Bytes of an answer read at most (Argo CD lists every Application with its status)."""
CHUNK = 64 * 1024
CONNECT = 5.0
"""Seconds to connect at most (less when the gate's timeout is shorter)."""


def timeouts(timeout: float) -> tuple[float, float]:
    """``(connect, read)`` socket timeouts for a call whose whole answer is due in
    ``timeout`` seconds."""
    return min(CONNECT, timeout), timeout


def read_body(raw: Any, deadline: float, limit: int = LIMIT) -> bytes:
    """The whole body of ``raw`` (a urllib3 response not read yet), before ``deadline``
    (``time.monotonic``); ``Unreachable`` when it is not complete by then."""
    chunks: list[bytes] = []
    size = 0
    whole = False
    try:
        while True:
            if time.monotonic() > deadline:
                raise Unreachable(f"answer not complete after {size} bytes")
            try:
                chunk = raw.read1(CHUNK)
            except (TimeoutError, urllib3.exceptions.TimeoutError):
                raise Unreachable(f"answer not complete after {size} bytes") from None
            if not chunk:
                whole = True
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise Garbage(f"answer larger than {limit // (1024 * 1024)} MiB")
            chunks.append(chunk)
    finally:
        if not whole:
            raw.close()  # never hand a half-read connection back to the pool
        raw.release_conn()


def snippet(body: bytes) -> str:
    """The start of a body, as words for a verdict."""
    return clip(body.decode("utf-8", "replace")) or "(empty)"


def json_of(body: bytes) -> Any:
    """The JSON of a body; ``Garbage`` (with its start) when it is none."""
    try:
        return json.loads(body)
    except ValueError:
        raise Garbage(f"not JSON: {snippet(body)}") from None


def secret(ref: SecretRef) -> str:
    """A secret the check sends; ``Unreachable`` naming where it should come from."""
    try:
        return ref.resolve()
    except ConfigError as exc:
        raise Unreachable(f"missing credentials: {'; '.join(exc.problems)}") from None
