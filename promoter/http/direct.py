"""A starlette app that hands a POST to a plain ASGI route straight to it.

Webhooks are the daemon's hottest requests, and their receivers are plain ASGI apps that
answer every outcome themselves (errors included). A POST to the exact path of such a
route skips starlette's error and exception middleware, its router's walk over every
route and its wrapping of ``send``; every other request takes the usual way, so a GET
to that path is still answered 405 by the router.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send


def direct_posts(routes: Sequence[BaseRoute]) -> dict[str, ASGIApp]:
    """Path → app of the POST-only routes to a plain ASGI app at a path without parameters."""
    return {
        route.path: route.app
        for route in routes
        if isinstance(route, Route)
        and route.methods == {"POST"}
        and route.app is route.endpoint  # a function endpoint is wrapped in a Request
        and "{" not in route.path
    }


class DirectPostApp(Starlette):
    """``Starlette`` whose plain ASGI POST routes are called without the middleware stack."""

    def __init__(self, *, routes: Sequence[BaseRoute], **options: Any) -> None:
        super().__init__(routes=routes, **options)
        self._direct = direct_posts(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            app = self._direct.get(scope["path"])
            if app is not None:
                await app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
