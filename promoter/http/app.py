"""The starlette app: the API's routes, any extra routes (webhooks), and a lifespan.

The app starts and stops whatever it is given (the daemon's runtime), on a worker thread,
never on the event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from promoter.http.api import Api


async def _index(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "name": "promoter",
            "strategies": "/api/v1/strategies",
            "metrics": "/metrics",
            "health": "/healthz",
        }
    )


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

    routes: list[BaseRoute] = [Route("/", _index), *api.routes(), *extra_routes]
    return Starlette(routes=routes, lifespan=lifespan)
