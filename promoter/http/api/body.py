"""Request bodies of the API, read with a cap: a body past it is refused, not buffered.

The API's bodies are a few hundred bytes (a status, an operation); ``MAX_BODY`` leaves
room for long descriptions and refuses the rest with 413 before reading it whole.
"""

from __future__ import annotations

from starlette.requests import Request

MAX_BODY = 64 * 1024
"""Bytes an API request body may have."""


class BodyTooLarge(Exception):
    """The body is larger than the cap."""


async def read_body(request: Request, cap: int = MAX_BODY) -> bytes:
    """The whole body, or BodyTooLarge as soon as it is known to pass ``cap`` bytes."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)
