"""A POST to a plain ASGI route goes straight to it; everything else through the middleware."""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from promoter.http.direct import DirectPostApp


class Counting:
    """A pure ASGI middleware that counts the requests it sees."""

    seen: list[str] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            Counting.seen.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


async def hook(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("hooked", 202)(scope, receive, send)


class Hook:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await hook(scope, receive, send)


async def page(request: Request) -> Response:
    return PlainTextResponse("page")


def test_a_post_to_a_plain_asgi_route_skips_the_middleware_and_nothing_else_does() -> None:
    Counting.seen.clear()
    app = DirectPostApp(
        routes=[
            Route("/hooks/a", Hook(), methods=["POST"]),
            Route("/pages/p", page, methods=["POST"]),
            Route("/hooks/{name}", Hook(), methods=["POST"]),
        ],
        middleware=[Middleware(Counting)],
    )
    with TestClient(app) as client:
        assert client.post("/hooks/a").text == "hooked"
        assert client.get("/hooks/a").status_code == 405
        assert client.post("/pages/p").text == "page"
        assert client.post("/hooks/b").text == "hooked"
    assert Counting.seen == ["GET /hooks/a", "POST /pages/p", "POST /hooks/b"]
