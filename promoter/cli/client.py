"""A small client of the daemon's HTTP API, for the CLI (status, the demo, the writes).

It speaks HTTP/1.1 through the standard library's ``http.client`` over one kept-alive
connection (opened again after the daemon closes it), so that a command starts without
loading an HTTP library: ``promoter status --url`` is this module and the table.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

from promoter.errors import PromoterError

TOKEN_HINT = "pass --token TOKEN or set PROMOTER_API_TOKEN (a token of the daemon's access.tokens)"


def _refusal(status: int, text: str) -> str:
    """What an error answer says; the candidates of an ambiguous name each on a line."""
    try:
        answer = json.loads(text)
    except ValueError:
        return text
    if not isinstance(answer, dict):
        return text
    detail = str(answer.get("error", text))
    candidates = answer.get("candidates")
    if isinstance(candidates, list) and candidates:
        detail += "\ncandidates:" + "".join(f"\n  {c}" for c in candidates)
    return detail


class ApiClient:
    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        """``token``: None reads ``PROMOTER_API_TOKEN``; "" sends none."""
        token = os.environ.get("PROMOTER_API_TOKEN") if token is None else token
        self._has_token = bool(token)
        self.base_url = url.rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PromoterError(f"--url {url!r}: give http://HOST:PORT or https://HOST:PORT")
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._prefix = parts.path
        self._timeout = timeout
        self._headers = {"accept": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._scheme == "https":
                self._connection = http.client.HTTPSConnection(
                    self._host,
                    self._port,
                    timeout=self._timeout,
                    context=ssl.create_default_context(),
                )
            else:
                self._connection = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
        return self._connection

    def _exchange(self, method: str, path: str, body: bytes | None) -> tuple[int, str]:
        """One request and its answer; once more on a fresh connection when a kept-alive
        one turns out closed (the daemon ends idle connections), never for a timeout."""
        headers = dict(self._headers)
        if body is not None:
            headers["content-type"] = "application/json"
        for attempt in (1, 2):
            connection = self._connect()
            try:
                connection.request(method, self._prefix + path, body=body, headers=headers)
                response = connection.getresponse()
                text = response.read().decode("utf-8", "replace")
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            except BaseException:
                self.close()
                raise
            if response.will_close:
                self.close()
            return response.status, text
        raise AssertionError("unreachable")

    def _call(self, method: str, path: str, *, json_body: Any = None) -> Any:
        body = None if json_body is None else json.dumps(json_body).encode()
        try:
            status, text = self._exchange(method, path, body)
        except (OSError, http.client.HTTPException) as exc:
            reason = "timed out" if isinstance(exc, socket.timeout) else str(exc) or repr(exc)
            raise PromoterError(f"cannot reach the daemon at {self.base_url}: {reason}") from exc
        if status == 401:
            if self._has_token:
                raise PromoterError(f"{method} {path}: the daemon refused the token ({TOKEN_HINT})")
            raise PromoterError(f"{method} {path}: the daemon wants a bearer token: {TOKEN_HINT}")
        if status >= 400:
            raise PromoterError(f"{method} {path}: {status} {_refusal(status, text)}")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise PromoterError(f"{method} {path}: the daemon answered {status}, not JSON") from exc

    def strategies(self) -> list[dict[str, Any]]:
        names = [s["name"] for s in self._call("GET", "/api/v1/strategies")["strategies"]]
        return [self.strategy(name) for name in names]

    def strategy(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/api/v1/strategies/{name}")
        return result

    def set_status(
        self,
        repo: str,
        sha: str,
        *,
        key: str,
        phase: str,
        description: str = "",
        url: str = "",
        force: bool = False,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"key": key, "phase": phase, "description": description, "url": url}
        if force:
            body["force"] = True
        result: dict[str, Any] = self._call(
            "POST", f"/api/v1/repositories/{repo}/commits/{sha}/statuses", json_body=body
        )
        return result

    def operate(self, strategy: str, operation: str, **body: Any) -> dict[str, Any]:
        """An operation on one environment (the demo's approval)."""
        result: dict[str, Any] = self._call(
            "POST",
            f"/api/v1/strategies/{strategy}/{operation}",
            json_body={k: v for k, v in body.items() if v is not None},
        )
        return result

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A write to ``path`` with a JSON body (a row of the table of operations)."""
        result: dict[str, Any] = self._call("POST", path, json_body=body)
        return result

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
