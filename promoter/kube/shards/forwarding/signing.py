"""Calls between replicas, signed: what a signature covers, and what the receiver refuses.

Replicas call each other to forward keys (``peers``), to pass a request on to the owner
of its strategy (``passing``) and to ask for each other's strategies (``views``). Each
call carries ``x-promoter-peer-signature``::

    t=<unix seconds>,n=<nonce>,h=<header;names>,v1=<hex HMAC-SHA256>

the HMAC, with the replicas' shared secret, of the timestamp, a random nonce, what the
call is (its method and target, and for a request passed on the caller's address), the
address of the replica it is for, the headers named in ``h`` with their values (for a
request passed on, every header it carries: the caller's credentials, a proxy's identity
header, the browser's ``Origin`` and ``Sec-Fetch-*``, the ``Host``) and the body.

The receiver (``Verifier``) refuses a call whose signature does not hold for it: another
secret, another body, method, path or header value, a call signed for another replica
(sent on to it from the one it was for), a timestamp more than ``SKEW`` seconds from
its own clock (stale, or from a clock far off), and a nonce it has already accepted
within that window (a captured call sent again). The headers the signature names are
the only ones the receiver believes: a request passed on is answered with those and no
other (``passing``), so a header added on the way is dropped, not trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

SIGNATURE = "x-promoter-peer-signature"
SKEW = 30.0
"""Seconds a signature is good for, either way of the receiver's clock."""
MAX_NONCES = 200_000
"""Nonces remembered at most (a minute of calls at over 3,000 a second): past it the
oldest are forgotten early, and a call signed as long ago is refused as stale instead."""


def _message(
    stamp: str, nonce: str, what: str, to: str, headers: list[tuple[str, str]], body: bytes
) -> bytes:
    named = "".join(f"{name}:{value}\n" for name, value in headers)
    head = f"{stamp}\n{nonce}\n{what}\n{to.rstrip('/')}\n{named}\n"
    return head.encode("latin-1", "replace") + body


def _digest(token: str, message: bytes) -> str:
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def sign(
    token: str,
    body: bytes,
    now: float | None = None,
    *,
    what: str,
    to: str,
    headers: Mapping[str, str] | None = None,
    nonce: str | None = None,
) -> str:
    """The signature header of a call ``what`` (method, target, ...) to the replica at
    ``to``, with ``body`` and ``headers`` (each signed, names lowercased)."""
    stamp = str(int(now if now is not None else time.time()))
    nonce = nonce or secrets.token_hex(16)
    named = sorted((k.lower(), v) for k, v in (headers or {}).items())
    digest = _digest(token, _message(stamp, nonce, what, to, named, body))
    names = ";".join(name for name, _ in named)
    return f"t={stamp},n={nonce},h={names},v1={digest}"


class Verifier:
    """One replica's check of the calls signed for it (``address``: where it is reached,
    as its member Lease says). Thread-safe."""

    def __init__(
        self,
        token: str | None,
        *,
        address: str,
        clock: Callable[[], float] = time.time,
        skew: float = SKEW,
        remembered: int = MAX_NONCES,
    ) -> None:
        self.token = token
        self.address = address
        self.clock = clock
        self.skew = skew
        self.remembered = remembered
        self._seen: set[str] = set()
        self._order: deque[tuple[float, str]] = deque()
        self._floor = 0.0
        """Calls signed before this are refused: their nonces may have been forgotten."""
        self._lock = threading.Lock()
        self.refused = 0

    def verify(
        self,
        header: str,
        body: bytes,
        *,
        what: str,
        headers: Mapping[str, str] | None = None,
    ) -> list[str] | None:
        """The header names ``header`` signs when it signs this call (``what``, ``body``,
        those headers' values in ``headers``) for this replica, fresh and never seen
        before; None when it does not (the call is to be refused)."""
        names = self._check(header, body, what, headers or {})
        if names is None:
            with self._lock:
                self.refused += 1
        return names

    def _check(
        self, header: str, body: bytes, what: str, headers: Mapping[str, str]
    ) -> list[str] | None:
        if not self.token:
            return None
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        stamp, nonce, digest = parts.get("t", ""), parts.get("n", ""), parts.get("v1", "")
        try:
            signed_at = int(stamp)
        except ValueError:
            return None
        now = self.clock()
        if not nonce or abs(now - signed_at) > self.skew:
            return None
        names = [n for n in parts.get("h", "").split(";") if n]
        named = [(name, headers.get(name, "")) for name in names]
        expected = _digest(self.token, _message(stamp, nonce, what, self.address, named, body))
        if not hmac.compare_digest(expected, digest):
            return None
        with self._lock:
            self._forget(now)
            if nonce in self._seen or signed_at < self._floor:
                return None
            self._seen.add(nonce)
            self._order.append((signed_at + self.skew, nonce))
        return names

    def _forget(self, now: float) -> None:
        """Under the lock: forget the nonces of calls that are stale by now anyway, and the
        oldest past ``remembered`` (calls signed as early are refused from then on)."""
        order = self._order
        while order and (order[0][0] < now or len(order) > self.remembered):
            until, nonce = order.popleft()
            self._seen.discard(nonce)
            if until >= now:
                self._floor = max(self._floor, until - self.skew + 1)
