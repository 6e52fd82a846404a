"""What keeps a browser from being used against the daemon: the Host check (DNS
rebinding), the headers every answer carries (CSP, framing, nosniff, referrer), and the
two checks of every write (not cross-site, JSON only).

``BrowserGuard`` wraps the app; webhook receivers (``/webhooks/``) are left alone: SCMs
send neither a browser's headers nor, for GitHub's form deliveries, JSON, and each
receiver checks its own signature. Their POSTs skip the middleware stack altogether
(``direct.DirectPostApp``).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from promoter.config.transport import is_loopback_host

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
"""Sent with every answer but the webhooks': no inline script or style, never framed,
never sniffed, no referrer, no window or resource shared with another origin."""

WEBHOOKS = "/webhooks/"
SAME_SITE = ("same-origin", "none")
"""``Sec-Fetch-Site`` values of a request this daemon's own page (or a person typing the
URL) made; ``same-site`` is refused too: another port of 127.0.0.1 is the same site."""


def host_name(host: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8080`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Hosts:
    """The Host names the daemon answers to: loopback names, any IP address (a rebinding
    attack always comes with a name), and the configured ones (``*``: any)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = {n.strip().lower().rstrip(".") for n in names if n.strip()}

    def allows(self, host: str) -> bool:
        if "*" in self.names:
            return True
        name = host_name(host).rstrip(".")
        if not name:
            return False
        if is_loopback_host(name) or name in self.names:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


class BrowserGuard:
    """ASGI middleware: a foreign Host is answered 421; every answer gets ``HEADERS``."""

    def __init__(self, app: ASGIApp, *, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope).startswith(WEBHOOKS):
            await self.app(scope, receive, send)
            return
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
        if not self.hosts.allows(host):
            await _misdirected(host, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def _route_path(scope: Scope) -> str:
    """The path the router sees: without the ``root_path`` a proxy mounted the app at."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path


async def _misdirected(host: str, send: Send) -> None:
    body = json.dumps(
        {
            "error": f"this daemon does not answer to the Host {host_name(host)[:100]!r}; "
            "add the name to access.hosts if it is really yours"
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), *HEADERS]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": 421, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def cross_site(request: Request, *, public_origin: str | None = None) -> str | None:
    """Why a write comes from another site's page, or None: ``Sec-Fetch-Site`` other than
    same-origin, or an ``Origin`` other than this daemon's (as the browser reached it, or
    ``daemon.publicUrl``). A client that sends neither (the CLI, curl) is no browser."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in SAME_SITE:
        return f"a {site.strip()[:20]} request (Sec-Fetch-Site) may not write"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    origin = origin.strip().lower().rstrip("/")
    own = request.headers.get("host", "").strip().lower()
    parts = urlsplit(origin)
    if parts.scheme in ("http", "https") and parts.netloc and parts.netloc == own:
        return None
    if public_origin and origin == public_origin:
        return None
    return f"a request from the page of another origin ({origin[:100]}) may not write"


def json_only(request: Request) -> bool:
    """Whether a write's body is declared ``application/json`` (which no form sends, and
    no page of another origin may send without a CORS preflight the daemon never grants)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media == "application/json"


def origin_of(url: str | None) -> str | None:
    """``scheme://host[:port]`` of ``url`` as a browser writes an Origin, or None."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return None
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = (parts.hostname or "").lower()
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port is not None and parts.port != default:
        netloc += f":{parts.port}"
    return f"{parts.scheme.lower()}://{netloc}"
