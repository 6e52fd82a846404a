"""Body cap: too large is 413 and the rest of the body is never read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette

from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.webhooks.helpers import Hooks, github_fixture, make_config, running_hooks
from webhooks import WebhookRoutes, build_routes

CAP = 64 * 1024


def _app(tmp_path: Path) -> tuple[Starlette, WebhookRoutes]:
    routes = build_routes(
        config=make_config(maxBodyBytes=CAP),
        enqueue=lambda keys: None,
        status_cache=StatusCache(),
        sha_index=ShaIndex(),
        state_dir=tmp_path,
    )
    return Starlette(routes=routes), routes


def _call(
    app: Starlette, headers: list[tuple[bytes, bytes]], chunks: int
) -> tuple[int, int, dict[bytes, bytes]]:
    """POST through the ASGI interface; (status, body messages the app read, response headers)."""
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += 1
        return {"type": "http.request", "body": b"x" * 16384, "more_body": read < chunks}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/webhooks/github",
        "raw_path": b"/webhooks/github",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"x-github-event", b"push"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
    }
    anyio.run(app, scope, receive, send)  # type: ignore[arg-type]  # plain dicts are ASGI
    start = sent[0]
    return start["status"], read, dict(start["headers"])


def test_a_declared_length_over_the_cap_is_413_before_any_of_the_body_is_read(
    tmp_path: Path,
) -> None:
    app, routes = _app(tmp_path)
    try:
        status, read, headers = _call(app, [(b"content-length", str(CAP + 1).encode())], 10**6)
    finally:
        routes.close()
    assert (status, read) == (413, 0)
    assert headers[b"connection"] == b"close"


def test_a_chunked_body_over_the_cap_is_413_as_soon_as_it_passes_the_cap(tmp_path: Path) -> None:
    app, routes = _app(tmp_path)
    try:
        status, read, _ = _call(app, [(b"transfer-encoding", b"chunked")], 10**6)
    finally:
        routes.close()
    assert status == 413
    assert read == CAP // 16384 + 1


def test_a_body_at_the_cap_is_read_whole_and_then_verified(tmp_path: Path) -> None:
    app, routes = _app(tmp_path)
    try:
        status, read, _ = _call(app, [(b"content-length", str(CAP).encode())], CAP // 16384)
    finally:
        routes.close()
    assert (status, read) == (401, CAP // 16384)


def test_a_content_length_that_is_not_a_number_is_400(tmp_path: Path) -> None:
    app, routes = _app(tmp_path)
    try:
        status, _, _ = _call(app, [(b"content-length", b"-1")], 1)
    finally:
        routes.close()
    assert status == 400


def test_a_signed_body_over_the_cap_is_413_through_the_client(tmp_path: Path) -> None:
    with running_hooks(tmp_path, make_config(maxBodyBytes=CAP)) as hooks:
        status = github_fixture("status/payload.json") | {"description": "x" * CAP}
        answer = hooks.github("status", status)
    assert (answer.status_code, answer.json()) == (413, {"result": "too_large"})


def test_the_default_cap_is_five_mebibytes(hooks: Hooks) -> None:
    github = hooks.routes.receivers[0]
    assert github.max_body == 5 * 1024 * 1024
