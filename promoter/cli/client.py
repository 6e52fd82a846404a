"""A small client of the daemon's HTTP API, for the CLI (status, the demo, the writes)."""

from __future__ import annotations

import os
from typing import Any

import httpx

from promoter.errors import PromoterError

TOKEN_HINT = "pass --token TOKEN or set PROMOTER_API_TOKEN (a token of the daemon's access.tokens)"


def _refusal(response: httpx.Response) -> str:
    """What an error answer says; the candidates of an ambiguous name each on a line."""
    try:
        answer = response.json()
    except ValueError:
        return response.text
    if not isinstance(answer, dict):
        return response.text
    detail = str(answer.get("error", response.text))
    candidates = answer.get("candidates")
    if isinstance(candidates, list) and candidates:
        detail += "\ncandidates:" + "".join(f"\n  {c}" for c in candidates)
    return detail


class ApiClient:
    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        """``token``: None reads ``PROMOTER_API_TOKEN``; "" sends none."""
        token = os.environ.get("PROMOTER_API_TOKEN") if token is None else token
        self._has_token = bool(token)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise PromoterError(f"cannot reach the daemon at {self._http.base_url}: {exc}") from exc
        if response.status_code == 401:
            if self._has_token:
                raise PromoterError(f"{method} {path}: the daemon refused the token ({TOKEN_HINT})")
            raise PromoterError(f"{method} {path}: the daemon wants a bearer token: {TOKEN_HINT}")
        if response.status_code >= 400:
            raise PromoterError(f"{method} {path}: {response.status_code} {_refusal(response)}")
        return response.json()

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
            "POST", f"/api/v1/repositories/{repo}/commits/{sha}/statuses", json=body
        )
        return result

    def operate(self, strategy: str, operation: str, **body: Any) -> dict[str, Any]:
        """An operation on one environment (the demo's approval)."""
        result: dict[str, Any] = self._call(
            "POST",
            f"/api/v1/strategies/{strategy}/{operation}",
            json={k: v for k, v in body.items() if v is not None},
        )
        return result

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A write to ``path`` with a JSON body (a row of the table of operations)."""
        result: dict[str, Any] = self._call("POST", path, json=body)
        return result

    def close(self) -> None:
        self._http.close()
