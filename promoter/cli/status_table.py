"""``promoter status``: a readable table of every strategy's environments."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _short(sha: str | None) -> str:
    return sha[:7] if sha else "-"


def render(strategies: Iterable[dict[str, Any]]) -> str:
    """A plain-text table from the API's strategy details."""
    header = ("STRATEGY", "ENVIRONMENT", "ACTIVE", "PROPOSED", "PR", "STATE", "REASON")
    rows: list[tuple[str, ...]] = []
    for strategy in strategies:
        if strategy.get("error"):
            rows.append((strategy["name"], "-", "-", "-", "-", "error", strategy["error"]))
        for env in strategy["environments"]:
            pr = env.get("pullRequest")
            healthy = env.get("lastHealthy")
            reason = env.get("reason", "")
            if healthy:
                reason += f" (last healthy {_short(healthy.get('drySha'))})"
            for hold in env.get("holds") or []:
                reason += f"; holds {_short(hold['drySha'])}"
            if env.get("paused"):
                reason += f"; paused: {env['paused']}"
            rows.append(
                (
                    strategy["name"],
                    env["branch"],
                    _short((env.get("active") or {}).get("drySha")),
                    _short((env.get("proposed") or {}).get("drySha")),
                    f"#{pr['number']}" if pr else "-",
                    env.get("state", "unknown"),
                    reason.strip(),
                )
            )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)
