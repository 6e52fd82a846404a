"""Where a request comes from: the peer always; the client a proxy forwards for only when
the peer is the trusted proxy, read from the header the operator names, right-most hop
that is not the proxy's own."""

from __future__ import annotations

from ipaddress import ip_network

import pytest
from starlette.requests import Request

from promoter.http.access.forwarded import Forwarding, parse_address, peer

TRUSTED = [ip_network("10.0.0.0/8"), ip_network("fd00::/8")]


def request(client: str | None, *headers: tuple[str, str]) -> Request:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        "client": (client, 1234) if client is not None else None,
    }
    return Request(scope)


def test_the_peer_is_the_connections_address_whatever_the_headers_say() -> None:
    assert peer(request("192.0.2.7", ("x-forwarded-for", "10.0.0.1"))) == "192.0.2.7"
    assert peer(request(None)) == ""


@pytest.mark.parametrize(
    ("hops", "client"),
    [
        (["203.0.113.5"], "203.0.113.5"),
        (["198.51.100.1, 203.0.113.5"], "203.0.113.5"),  # what the browser claimed, left
        (["203.0.113.5, 10.1.1.1, 10.2.2.2"], "203.0.113.5"),  # two proxies of ours
        (["198.51.100.1", "203.0.113.5, 10.1.1.1"], "203.0.113.5"),  # headers in order
        (["10.1.1.1, 10.2.2.2"], "10.1.1.1"),  # from inside: the first hop
        (["[2001:db8::1]:443"], "2001:db8::1"),
        (["203.0.113.5:8080"], "203.0.113.5"),
        (["fd00::1, 2001:db8::9, fd00::2"], "2001:db8::9"),
        (["198.51.100.1, not-an-address, 10.1.1.1"], "not-an-address"),
        (["x" * 200 + ", 10.1.1.1"], "x" * 64),
    ],
)
def test_the_client_is_the_right_most_hop_the_proxy_does_not_own(
    hops: list[str], client: str
) -> None:
    forwarding = Forwarding(TRUSTED, "X-Forwarded-For")
    sent = request("10.9.9.9", *(("x-forwarded-for", h) for h in hops))
    assert forwarding.client(sent) == client


def test_no_client_is_believed_from_a_peer_the_proxy_does_not_own() -> None:
    forwarding = Forwarding(TRUSTED, "X-Forwarded-For")
    assert forwarding.client(request("127.0.0.1", ("x-forwarded-for", "10.1.1.1"))) is None
    assert forwarding.client(request("11.0.0.1", ("x-forwarded-for", "203.0.113.5"))) is None
    assert forwarding.client(request(None, ("x-forwarded-for", "203.0.113.5"))) is None
    assert not forwarding.trusted_peer(request("11.0.0.1"))
    assert forwarding.trusted_peer(request("10.255.255.255"))


def test_only_the_header_the_operator_names_is_read() -> None:
    real_ip = Forwarding(TRUSTED, "X-Real-IP")
    sent = request("10.9.9.9", ("x-forwarded-for", "198.51.100.1"), ("x-real-ip", "203.0.113.5"))
    assert real_ip.client(sent) == "203.0.113.5"
    assert Forwarding(TRUSTED, None).client(sent) is None
    assert Forwarding(TRUSTED, "X-Forwarded-For").client(request("10.9.9.9")) is None


def test_a_hop_is_read_as_a_proxy_writes_it() -> None:
    assert str(parse_address(" 192.0.2.1 ")) == "192.0.2.1"
    assert str(parse_address('"[2001:db8::1]:80"')) == "2001:db8::1"
    assert str(parse_address("[2001:db8::1]")) == "2001:db8::1"
    assert str(parse_address("2001:db8::1")) == "2001:db8::1"
    assert str(parse_address("192.0.2.1:80")) == "192.0.2.1"
    assert parse_address("[2001:db8::1") is None
    assert str(parse_address("[2001:db8::1]:80]")) == "2001:db8::1"
    assert parse_address("unknown") is None
    assert parse_address("X192.0.2.1X") is None
    assert parse_address("") is None
