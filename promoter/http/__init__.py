"""The HTTP face of the daemon: the JSON API, health and metrics, the status page.

It reads the daemon through two narrow ports (``Views``, ``Commands``) and never
reaches into its parts.
"""

from promoter.http.access import AccessControl
from promoter.http.api import Api
from promoter.http.app import build_app
from promoter.http.identity import Identity, TokenReview
from promoter.http.loopback import ThreadServer, free_port
from promoter.http.ports import Commands, Operations, Views
from promoter.http.views import strategy_json, strategy_summary

__all__ = [
    "AccessControl",
    "Api",
    "Commands",
    "Identity",
    "Operations",
    "ThreadServer",
    "TokenReview",
    "Views",
    "build_app",
    "free_port",
    "strategy_json",
    "strategy_summary",
]
