"""The CLI's client of the daemon over real HTTP: one kept-alive connection, opened again
when the daemon closes it; every failure a plain sentence that names the daemon."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from promoter.cli.client import ApiClient
from promoter.errors import PromoterError
from promoter.http import ThreadServer, free_port

SEEN: list[dict[str, str]] = []


async def strategies(request: Request) -> Response:
    SEEN.append({"authorization": request.headers.get("authorization", "")})
    close = request.query_params.get("close") == "1"
    headers = {"connection": "close"} if close else {}
    return JSONResponse({"strategies": [{"name": "guestbook"}]}, headers=headers)


async def strategy(request: Request) -> Response:
    name = request.path_params["name"]
    if name == "garbage":
        return PlainTextResponse("<html>a proxy's page</html>")
    if name == "prod":
        return JSONResponse(
            {"error": "prod names 2 environments", "candidates": ["team-a/prod", "team-b/prod"]},
            status_code=409,
        )
    return JSONResponse({"name": name, "environments": []})


async def statuses(request: Request) -> Response:
    if not request.headers.get("authorization"):
        return JSONResponse({"error": "who are you"}, status_code=401)
    return JSONResponse({"received": await request.json()})


APP = Starlette(
    routes=[
        Route("/api/v1/strategies", strategies),
        Route("/api/v1/strategies/{name}", strategy),
        Route("/api/v1/repositories/{repo}/commits/{sha}/statuses", statuses, methods=["POST"]),
    ]
)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    server = ThreadServer(APP, port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_reads_go_over_one_connection_with_the_token(url: str) -> None:
    SEEN.clear()
    client = ApiClient(url, token="t0ken")
    try:
        assert client.strategies() == [{"name": "guestbook", "environments": []}]
        first = client._connection
        assert client.strategy("guestbook")["name"] == "guestbook"
        assert client._connection is first is not None
    finally:
        client.close()
    assert SEEN == [{"authorization": "Bearer t0ken"}]


def test_a_connection_the_daemon_closed_is_opened_again(url: str) -> None:
    client = ApiClient(url, token="")
    try:
        assert client._call("GET", "/api/v1/strategies?close=1")["strategies"]
        assert client._connection is None
        assert client.strategy("guestbook")["name"] == "guestbook"
    finally:
        client.close()


def test_a_refusal_lists_the_candidates_of_an_ambiguous_name(url: str) -> None:
    with ApiClient(url, token="") as client, pytest.raises(PromoterError) as refused:
        client.strategy("prod")
    assert str(refused.value) == (
        "GET /api/v1/strategies/prod: 409 prod names 2 environments\n"
        "candidates:\n  team-a/prod\n  team-b/prod"
    )


def test_an_answer_that_is_not_json_is_said_so(url: str) -> None:
    with ApiClient(url, token="") as client, pytest.raises(PromoterError, match="not JSON"):
        client.strategy("garbage")


def test_a_daemon_that_wants_a_token_says_how_to_give_one(url: str) -> None:
    with ApiClient(url, token="") as client, pytest.raises(PromoterError, match="bearer token"):
        client.set_status("gitops", "a" * 40, key="ci", phase="success")
    with ApiClient(url, token="t") as client:
        sent = client.set_status("gitops", "a" * 40, key="ci", phase="success")
    assert sent["received"]["key"] == "ci"


def test_a_daemon_that_is_not_there_is_named() -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    with ApiClient(gone, token="") as client, pytest.raises(PromoterError) as refused:
        client.strategies()
    assert str(refused.value).startswith(f"cannot reach the daemon at {gone}: ")


def test_an_address_that_is_not_http_is_refused_before_any_call() -> None:
    with pytest.raises(PromoterError, match="give http://HOST:PORT"):
        ApiClient("127.0.0.1:8080")
