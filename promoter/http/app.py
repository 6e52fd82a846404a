"""The starlette app: any extra routes (webhooks, called directly), the API's routes, and a
lifespan.

Every request but a webhook's goes through ``guard.BrowserGuard`` (the Host check and
the security headers). The app starts and stops whatever it is given (the daemon's
runtime), on a worker thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from promoter.http.access import BrowserGuard
from promoter.http.api import Api, EventStream
from promoter.http.direct import DirectPostApp
from promoter.http.pages import STATIC, Dashboard, status_page, wants_html


def _index(dashboard: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def index(request: Request) -> Response:
        """The dashboard for browsers; a small JSON index for API clients."""
        if wants_html(request):
            return await dashboard.index(request)
        return _json_index()

    return index


def _json_index() -> JSONResponse:
    return JSONResponse(
        {
            "name": "promoter",
            "strategies": "/api/v1/strategies",
            "metrics": "/metrics",
            "health": "/healthz",
            "dashboard": "/",
            "events": "/events",
            "audit": "/api/v1/audit",
            "whoami": "/api/v1/whoami",
        }
    )


def _events(api: Api, stream: EventStream) -> Callable[[Request], Awaitable[Response]]:
    async def events(request: Request) -> Response:
        """The change stream, of the strategies the caller may read."""
        who = await api.reader(request)
        if isinstance(who, Response):
            return who
        return await stream.endpoint(request, readable=lambda name: api.readable(who, name))

    return events


def build_app(
    api: Api,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    start: Callable[[], None],
    stop: Callable[[], None],
) -> Starlette:
    """A starlette app serving ``api`` and ``extra_routes``; ``start``/``stop`` on its lifespan."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(start)
        try:
            yield
        finally:
            await run_in_threadpool(stop)

    stream = EventStream(api.views)
    dashboard = Dashboard(api, stream)
    routes: list[BaseRoute] = [
        *extra_routes,  # webhooks first: the router tries routes in order
        Route("/", _index(dashboard)),
        Route("/dashboard/{name}", dashboard.strategy),
        Route("/audit", dashboard.audit),
        Route("/events", _events(api, stream)),
        Route("/strategies/{name}", status_page(api)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        *api.routes(),
    ]
    guard = Middleware(BrowserGuard, hosts=api.access.hosts)
    return DirectPostApp(routes=routes, lifespan=lifespan, middleware=[guard])
