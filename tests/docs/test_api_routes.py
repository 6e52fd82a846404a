"""docs/api.md names every route the daemon serves: each method and path (each operation
of ``/api/v1/strategies/{name}/{operation}`` by name, each webhook receiver), as the app
that ``promoter serve`` builds has them."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.routing import Mount, Route

from promoter.cli.sandbox import GitOpsRepo, sandbox_config
from promoter.config import STRATEGY_OPERATIONS as OPERATIONS
from promoter.config.loader import parse_config
from promoter.wiring import Daemon

ROOT = Path(__file__).resolve().parents[2]
SHARDED = {"GET /api/v1/shards"}
"""Served by each replica in Kubernetes mode with shards (``promoter.kube.shards.routes``)."""


def served(tmp_path: Path) -> set[str]:
    """``METHOD /path`` of each route of the daemon's app."""
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(parse_config(sandbox_config(gitops.path, tmp_path / "state")))
    found: set[str] = set()
    for route in daemon.app.routes:
        if isinstance(route, Mount):
            found.add(f"GET {route.path}/{{path}}")
            continue
        assert isinstance(route, Route), route
        path = route.path
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            if path.endswith("/{operation:str}"):
                found.update(f"{method} {path.rsplit('/', 1)[0]}/{op}" for op in OPERATIONS)
            else:
                found.add(f"{method} {path}")
    return found


def documented() -> set[str]:
    table = (ROOT / "docs/api.md").read_text().split("## Endpoints", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"`((?:GET|POST|PUT|DELETE) /[^`\s]*)`", table))


def test_every_route_the_daemon_serves_is_in_the_api_reference_and_nothing_else(
    tmp_path: Path,
) -> None:
    routes = served(tmp_path) | SHARDED
    assert "POST /api/v1/strategies/{name}/approve-change" in routes
    assert "POST /webhooks/forgejo" in routes
    docs = documented()
    assert sorted(routes - docs) == []  # served, not documented
    assert sorted(docs - routes) == []  # documented, not served
