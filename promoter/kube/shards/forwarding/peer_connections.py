"""Keep-alive HTTP connections from one replica to its peers, for the forwarding of keys.

The forwarder posts small signed JSON bodies to a handful of addresses, many times a
second under a webhook storm, from a replica whose cores are busy reconciling. The
standard library's ``http.client`` does one such call for about a quarter of httpx's
CPU (docs/scaling.md), and the call's time is what a forwarded key waits. Each posting thread keeps
its own connection per address (an ``HTTPConnection`` is not thread-safe); a connection
the peer closed while it was idle is opened again once, and the call sent again, with
its headers made afresh (a signature's nonce is good for one call).
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

CLOSED_WHILE_IDLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
"""What a kept connection the peer closed in the meantime raises on its next call."""


class PeerError(Exception):
    """A peer could not be reached or did not answer in time."""


class PeerConnections:
    """``post`` to a peer's address over a kept connection; ``close`` ends them all."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def post(
        self, address: str, path: str, body: bytes, headers: Callable[[], dict[str, str]]
    ) -> int:
        """POST ``body`` to ``address`` + ``path`` with ``headers()`` (made for each
        attempt); the answer's status (its body is read and dropped). ``PeerError`` when
        the peer cannot be reached or is too slow."""
        target = _split(address)[2].rstrip("/") + path
        for attempt in (1, 2):
            connection, reused = self._connection(address)
            try:
                connection.request("POST", target, body=body, headers=headers())
                answer = connection.getresponse()
                answer.read()
            except CLOSED_WHILE_IDLE as exc:
                self._drop(address, connection)
                if reused and attempt == 1:
                    continue
                raise PeerError(f"{address}: {exc or type(exc).__name__}") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop(address, connection)
                raise PeerError(f"{address}: {exc or type(exc).__name__}") from exc
            return answer.status  # an answer that closes: the next call opens it again
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._all = self._all, []
        for connection in connections:
            connection.close()

    def _connection(self, address: str) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to ``address``, and whether it served a call before."""
        mine: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault("by", {})
        found = mine.get(address)
        if found is not None:
            return found, True
        scheme, (host, port), _ = _split(address)
        kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        connection = kind(host, port, timeout=self.timeout)
        with self._lock:
            if self._closed:
                raise PeerError("the forwarder is stopping")
            self._all.append(connection)
        mine[address] = connection
        return connection, False

    def _drop(self, address: str, connection: http.client.HTTPConnection) -> None:
        connection.close()
        mine: dict[str, http.client.HTTPConnection] = self._local.__dict__.get("by", {})
        if mine.get(address) is connection:
            del mine[address]
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)


def _split(address: str) -> tuple[str, tuple[str, int | None], str]:
    """``(scheme, (host, port), path)`` of a peer's address; ``PeerError`` for one that is
    not a URL this can call (a Lease written by hand, a bad ``--advertise-address``)."""
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError as exc:
        raise PeerError(f"not a peer's address: {address!r} ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PeerError(f"not a peer's address: {address!r}")
    return parts.scheme, (parts.hostname, port), parts.path
