"""The Host allow-list and the Origin check match names exactly: a look-alike name, a name
that ends or begins like the daemon's, another port or another scheme is another site."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from promoter.http.access import Hosts, cross_site
from promoter.http.access.guard import host_name, origin_of

NAME = "promoter.example.com"
PUBLIC = "https://deploys.example.com"


def request(**headers: str) -> Request:
    raw = [(k.replace("_", "-").encode(), v.encode("latin-1")) for k, v in headers.items()]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": raw})


@pytest.mark.parametrize(
    "host",
    [
        NAME,
        f"{NAME}:8443",
        "PROMOTER.Example.COM",
        f"{NAME}.",
        "localhost",
        "dev.localhost",
        "127.0.0.1",
        "127.0.0.1:8080",
        "[::1]:8080",
        "10.1.2.3",
        "[2001:db8::1]",
    ],
)
def test_the_configured_name_loopback_names_and_addresses_are_answered(host: str) -> None:
    assert Hosts([NAME]).allows(host)


@pytest.mark.parametrize(
    "host",
    [
        f"evil-{NAME}",  # ends like it
        f"x{NAME}",
        f"sub.{NAME}",
        f"{NAME}.evil.example",  # begins like it
        f"{NAME}x",
        "promoter.example.co",  # a prefix of it
        "promoter.example",
        "example.com",
        "promoter.examp1e.com",  # looks like it
        "localhost.evil.example",
        "evillocalhost",
        "127.0.0.1.evil.example",
        "127.0.0.1.nip.io",
        "",
        ":8080",
    ],
)
def test_any_other_name_is_refused_however_much_it_looks_like_one(host: str) -> None:
    assert not Hosts([NAME]).allows(host)


def test_a_star_answers_every_name_and_an_empty_entry_none() -> None:
    assert Hosts(["*"]).allows("anything.example")
    assert not Hosts(["", " "]).allows("anything.example")
    assert Hosts([" Promoter.Example.com. "]).allows(NAME)


def test_a_hosts_name_is_read_without_its_port() -> None:
    assert host_name("Promoter.example.com:8443") == NAME
    assert host_name("[::1]:8080") == "::1"
    assert host_name("[::1") == "[::1"
    assert host_name("::1") == "::1"
    assert host_name(" localhost ") == "localhost"


OWN = {"host": f"{NAME}:8443"}


@pytest.mark.parametrize(
    "origin",
    [
        f"https://{NAME}:8443",
        f"http://{NAME}:8443",
        f"HTTPS://{NAME.upper()}:8443/",
        PUBLIC,
        f"{PUBLIC}/",
    ],
)
def test_a_write_from_the_daemons_own_origin_passes(origin: str) -> None:
    assert cross_site(request(origin=origin, **OWN), public_origin=PUBLIC) is None


@pytest.mark.parametrize(
    "origin",
    [
        f"https://evil-{NAME}:8443",  # ends like it
        f"https://{NAME}:8443.evil.example",  # begins like it
        f"https://{NAME}.evil.example:8443",
        f"https://{NAME}",  # another port
        f"https://{NAME}:443",
        f"https://{NAME}:84430",
        f"https://{NAME}:844",
        f"ftp://{NAME}:8443",  # another scheme
        f"{NAME}:8443",
        "https://deploys.example.com.evil.example",
        "https://evil-deploys.example.com",
        "https://deploys.example.co",
        "http://deploys.example.com",
        "https://deploys.example.com:8443",
        "null",
        "",
    ],
)
def test_a_write_from_any_other_origin_is_refused(origin: str) -> None:
    why = cross_site(request(origin=origin, **OWN), public_origin=PUBLIC)
    assert why is not None and why.startswith("a request from the page of another origin")


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site", "same-origin-x", ""])
def test_a_browser_that_says_the_write_comes_from_another_site_is_refused(site: str) -> None:
    why = cross_site(request(sec_fetch_site=site, **OWN))
    assert why is not None and "(Sec-Fetch-Site) may not write" in why


@pytest.mark.parametrize("site", ["same-origin", "none", " Same-Origin "])
def test_a_browser_that_says_the_write_is_its_own_pages_passes(site: str) -> None:
    assert cross_site(request(sec_fetch_site=site, **OWN)) is None


def test_a_client_that_is_no_browser_sends_neither_and_passes() -> None:
    assert cross_site(request(**OWN)) is None
    assert cross_site(request()) is None


def test_without_a_public_url_only_the_host_the_browser_reached_is_own() -> None:
    assert cross_site(request(origin=PUBLIC, **OWN)) is not None
    for origin in (f"https://{NAME}:8443", "http://xxxx"):  # no Host at all: no name is own
        assert cross_site(request(origin=origin)) is not None, origin


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Deploys.example.com/promoter/", "https://deploys.example.com"),
        ("https://deploys.example.com:443", "https://deploys.example.com"),
        ("http://deploys.example.com:80/x", "http://deploys.example.com"),
        ("https://deploys.example.com:8443", "https://deploys.example.com:8443"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("https://[2001:db8::1]", "https://[2001:db8::1]"),
        (None, None),
        ("", None),
        ("deploys.example.com", None),
        ("https://", None),
    ],
)
def test_the_public_url_is_written_as_a_browser_writes_an_origin(
    url: str | None, origin: str | None
) -> None:
    assert origin_of(url) == origin
