"""How the OIDC client calls its provider, against a small server on 127.0.0.1: a call that
is not answered within ``oidc.timeout`` is refused saying so, a provider that cannot be
reached is named by the error, an answer over ``MAX_DOCUMENT`` bytes is refused (one of
that size is read), and a redirect is not followed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from promoter.http import ThreadServer, free_port
from promoter.http.access.oidc import MAX_DOCUMENT, Provider, Refused

FILLED = '{"pad":"' + "x" * (MAX_DOCUMENT - len('{"pad":""}')) + '"}'


async def slow(request: Request) -> Response:
    await asyncio.sleep(3)
    return JSONResponse({"late": True})


async def exact(request: Request) -> Response:
    return Response(FILLED, media_type="application/json")


async def over(request: Request) -> Response:
    return Response(FILLED + " ", media_type="application/json")


async def moved(request: Request) -> Response:
    return RedirectResponse("/exact", status_code=302)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    app = Starlette(
        routes=[
            Route("/slow", slow),
            Route("/exact", exact),
            Route("/over", over),
            Route("/moved", moved),
        ]
    )
    running = ThreadServer(app, port, name="oidc-calls").start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        running.stop()


def provider(timeout: float = 5) -> Provider:
    return Provider(
        issuer="https://idp.example.com",
        client_id="promoter",
        client_secret=None,
        redirect_uri="https://promoter.example/auth/callback",
        scopes=[],
        timeout=timeout,
    )


def refusal(url: str, timeout: float = 5) -> str:
    with pytest.raises(Refused) as refused:
        provider(timeout)._get(url)
    return str(refused.value)


def test_a_provider_that_does_not_answer_in_time_is_refused_saying_so(server: str) -> None:
    assert refusal(f"{server}/slow", timeout=0.5) == "the provider did not answer in 0.5s"


def test_a_provider_that_cannot_be_reached_is_named_by_the_error() -> None:
    closed = f"http://127.0.0.1:{free_port()}/x"
    assert refusal(closed) == "the provider cannot be reached (ConnectError)"


def test_an_answer_of_the_largest_size_is_read_and_one_byte_more_is_refused(server: str) -> None:
    assert provider()._get(f"{server}/exact") == {"pad": "x" * (MAX_DOCUMENT - 10)}
    where = server.removeprefix("http://")
    assert refusal(f"{server}/over") == f"the provider's answer from {where}/over is too large"


def test_a_redirect_is_not_followed(server: str) -> None:
    where = server.removeprefix("http://")
    assert refusal(f"{server}/moved") == f"the provider answered 302 for {where}/moved"
