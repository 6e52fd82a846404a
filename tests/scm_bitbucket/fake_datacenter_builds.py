"""The build statuses of the fake Bitbucket Data Center: one per key and commit, under the
commits builds API and the older ``/rest/build-status/1.0`` alike (POST one, GET a page)."""

from __future__ import annotations

import copy
import time
from typing import Any, Protocol

Answer = tuple[int, Any, dict[str, str]]
STATES = ("SUCCESSFUL", "FAILED", "INPROGRESS", "CANCELLED")


class Errors(Protocol):
    def error(self, status: int, message: str, exception: str = "", **more: Any) -> Answer: ...


def answer(
    fake: Errors,
    method: str,
    builds: dict[str, dict[str, dict[str, Any]]],
    sha: str,
    query: dict[str, str],
    body: Any,
) -> Answer:
    kept = builds.setdefault(sha, {})
    if method == "POST":
        body = body or {}
        if body.get("state") not in STATES:
            return fake.error(400, "state must be one of SUCCESSFUL, FAILED, INPROGRESS")
        if not body.get("key") or not body.get("url"):
            return fake.error(400, "key and url are required")
        kept[body["key"]] = {
            "key": body["key"],
            "state": body["state"],
            "name": body.get("name", ""),
            "url": body["url"],
            "description": body.get("description", ""),
            "dateAdded": int(time.time() * 1000),
        }
        return 204, None, {}
    if method != "GET":
        return fake.error(405, "method not allowed")
    items = list(kept.values())
    limit, start = int(query.get("limit", 25)), int(query.get("start", 0))
    last = start + limit >= len(items)
    page: dict[str, Any] = {
        "size": len(items[start : start + limit]),
        "limit": limit,
        "start": start,
        "isLastPage": last,
        "values": copy.deepcopy(items[start : start + limit]),
    }
    if not last:
        page["nextPageStart"] = start + limit
    return 200, page, {}
