"""Reading a request body with a cap: too large is refused without reading the rest.

``Content-Length`` is checked first; a body sent without it (chunked) is read
message by message from the ASGI ``receive`` and abandoned as soon as it passes
the cap.
"""

from __future__ import annotations

from starlette.types import Receive


class BodyTooLarge(Exception):
    """The body is larger than the cap (answered 413, connection closed)."""


class BadLength(Exception):
    """The Content-Length header is not a number (answered 400)."""


class ClientGone(Exception):
    """The client disconnected before sending the whole body."""


def check_length(declared: str | None, cap: int) -> None:
    """BodyTooLarge or BadLength from the Content-Length header alone, before reading."""
    if declared is None:
        return
    declared = declared.strip()
    if not declared.isascii() or not declared.isdigit() or len(declared) > 18:
        raise BadLength()
    if int(declared) > cap:
        raise BodyTooLarge()


async def read_capped(receive: Receive, declared: str | None, cap: int) -> bytes:
    """The whole body, or BodyTooLarge as soon as it is known to exceed ``cap`` bytes."""
    check_length(declared, cap)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone()
        chunk: bytes = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > cap:
                raise BodyTooLarge()
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    if len(chunks) == 1:
        return chunks[0]
    return b"".join(chunks)
