"""Where a request comes from: its peer, and the client a trusted proxy says it forwards.

uvicorn's own handling of forwarded headers is off (``promoter.http.serving``): the
peer is the address that opened the connection, whatever the request's headers say.
Only a peer among ``access.proxy.trustedAddresses`` is believed about the client it
forwards, and only through the header the operator names (``addressHeader``,
``X-Forwarded-For`` by default): the client is the right-most address of that header
that is not one of the proxy's own, since each proxy appends the peer it saw and
everything left of the first untrusted hop was written by whoever that hop was.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from starlette.requests import Request

Network = IPv4Network | IPv6Network

MAX_HOP = 64
"""Characters of a hop kept when it is no address (what the proxy wrote, clipped)."""


def peer(request: Request) -> str:
    """The address that opened the connection (``""`` when there is none, a test's)."""
    return request.client.host if request.client else ""


def parse_address(text: str) -> IPv4Address | IPv6Address | None:
    """An address as a proxy writes a hop (``10.0.0.1``, ``[::1]:443``, ``1.2.3.4:80``)."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else text
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class Forwarding:
    """The trusted proxy's addresses, and the header it names its client in."""

    def __init__(self, trusted: Sequence[Network], header: str | None) -> None:
        self.networks = tuple(trusted)
        self.header = header.lower() if header else None

    def trusts(self, address: str) -> bool:
        """Whether ``address`` is one of the proxy's own."""
        parsed = parse_address(address)
        return parsed is not None and any(parsed in network for network in self.networks)

    def trusted_peer(self, request: Request) -> bool:
        return self.trusts(peer(request))

    def client(self, request: Request) -> str | None:
        """The client the trusted proxy forwards for; None when the peer is not the proxy
        or it names none."""
        if self.header is None or not self.trusted_peer(request):
            return None
        hops = [
            hop.strip()
            for value in request.headers.getlist(self.header)
            for hop in value.split(",")
            if hop.strip()
        ]
        for hop in reversed(hops):
            parsed = parse_address(hop)
            if parsed is None:
                return hop[:MAX_HOP]
            if not any(parsed in network for network in self.networks):
                return str(parsed)
        return str(parse_address(hops[0])) if hops else None
