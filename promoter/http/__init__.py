"""The HTTP face of the daemon: the JSON API, health and metrics, the dashboard and the
status page.

Three rooms (docs/architecture.md): ``access`` (who calls, what they may do, the
browser's checks), ``api`` (the JSON API and the change stream) and ``pages`` (what
people read), each allowed to import only the rooms below it; ``app`` puts them together.
It reads the daemon through two narrow ports (``Views``, ``Commands``) and never reaches
into its parts. Code outside this package imports it from here alone.
"""

from promoter.http.access import (
    HEADERS,
    AccessControl,
    BrowserGuard,
    Credentials,
    Hosts,
    Identity,
    TokenReview,
    json_only,
)
from promoter.http.api import (
    MAX_BODY,
    MAX_REASON,
    MOVED,
    Api,
    BodyTooLarge,
    read_body,
    strategy_json,
    strategy_summary,
)
from promoter.http.app import build_app
from promoter.http.direct import DirectPostApp
from promoter.http.loopback import ThreadServer, free_port
from promoter.http.ports import Commands, Operations, Views
from promoter.http.serving import uvicorn_options

__all__ = [
    "HEADERS",
    "MAX_BODY",
    "MAX_REASON",
    "MOVED",
    "AccessControl",
    "Api",
    "BodyTooLarge",
    "BrowserGuard",
    "Commands",
    "Credentials",
    "DirectPostApp",
    "Hosts",
    "Identity",
    "Operations",
    "ThreadServer",
    "TokenReview",
    "Views",
    "build_app",
    "free_port",
    "json_only",
    "read_body",
    "strategy_json",
    "strategy_summary",
    "uvicorn_options",
]
