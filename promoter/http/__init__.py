"""The HTTP face of the daemon: the JSON API, health and metrics, the status page.

It reads the daemon through two narrow ports (``Views``, ``Commands``) and never
reaches into its parts.
"""

from promoter.http.api import Api, is_loopback
from promoter.http.app import build_app
from promoter.http.loopback import ThreadServer, free_port
from promoter.http.ports import Commands, Operations, Views
from promoter.http.views import strategy_json, strategy_summary

__all__ = [
    "Api",
    "Commands",
    "Operations",
    "ThreadServer",
    "Views",
    "build_app",
    "free_port",
    "is_loopback",
    "strategy_json",
    "strategy_summary",
]
