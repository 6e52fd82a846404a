"""How uvicorn serves the daemon, in one place: ``promoter serve``, a Kubernetes replica,
the demo and the tests all take their settings from here.

uvicorn believes ``X-Forwarded-For`` and ``X-Forwarded-Proto`` from 127.0.0.1 by default
(``proxy_headers``, ``forwarded_allow_ips``, or the ``FORWARDED_ALLOW_IPS`` variable):
any process of this machine could then pass for any address, the trusted proxy's
included, and be believed as whoever that proxy names. Here uvicorn's handling is off, so
a request's client is the peer that opened the connection; the daemon reads a proxy's
headers itself, from ``access.proxy.trustedAddresses`` only
(``promoter.http.access.forwarded``).
"""

from __future__ import annotations

from typing import Any


def uvicorn_options(*, host: str, port: int) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.Config`` (and ``uvicorn.run``) for the daemon."""
    return {
        "host": host,
        "port": port,
        "proxy_headers": False,
        "forwarded_allow_ips": [],
        "log_config": None,
        "access_log": False,
    }
