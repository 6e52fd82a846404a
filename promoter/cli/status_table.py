"""``promoter status``: a readable table of every strategy's environments."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from promoter.config import short_name


def _short(sha: str | None) -> str:
    return sha[:7] if sha else "-"


def _gates_line(env: dict[str, Any]) -> str | None:
    """Every gate of an environment with a PR to judge: its verdict, and when it changes."""
    gates = env.get("gates") or []
    if not gates:
        return None
    parts = []
    for gate in gates:
        text = f"{gate['name']} {gate['phase']}"
        if gate.get("changesAt"):
            text += f" (changes {gate['changesAt']})"
        parts.append(text)
    return "    gates: " + ", ".join(parts)


def _name(branch: str) -> str:
    return short_name(branch)


def rollout_lines(strategy: dict[str, Any]) -> list[str]:
    """The rollout of a strategy that is not a line, drawn in text."""
    rollout = strategy.get("rollout")
    if not rollout:
        return []
    if "tiers" in rollout:
        waves = []
        for tier in rollout["tiers"]:
            members = ", ".join(_name(b) for b in tier["environments"])
            notes = []
            if tier["require"] < len(tier["environments"]):
                notes.append(f"{tier['require']} of {len(tier['environments'])} go on")
            if tier.get("maxParallel"):
                notes.append(f"{tier['maxParallel']} at once")
            if tier.get("noticeLead"):
                notes.append(f"notice {tier['noticeLead']:g}s")
            text = members if len(tier["environments"]) == 1 else "{" + members + "}"
            waves.append(text + (f" ({'; '.join(notes)})" if notes else ""))
        return [f"{strategy['name']}: " + " -> ".join(waves)]
    lines = [f"{strategy['name']}:"]
    for branch, groups in rollout["dependsOn"].items():
        ups = " and ".join(", ".join(_name(b) for b in g) for g in groups) or "(first)"
        lines.append(f"  {_name(branch)} <- {ups}")
    return lines


def render(strategies: Iterable[dict[str, Any]]) -> str:
    """A plain-text table from the API's strategy details (ACTIVE and PROPOSED are dry
    commits; PROPOSED COMMIT is the hydrated commit the PR's statuses go on); under an
    environment with gates to pass, a line with each gate's verdict and when time alone
    will change it."""
    header: tuple[str, ...] = (
        "STRATEGY",
        "ENVIRONMENT",
        "ACTIVE",
        "PROPOSED",
        "PROPOSED COMMIT",
        "PR",
        "STATE",
        "REASON",
    )
    strategies = list(strategies)
    sharded = any(s.get("owner") for s in strategies)
    if sharded:  # Kubernetes mode, sharded: the replica that works on each strategy
        header = (*header[:-2], "REPLICA", *header[-2:])
    rows: list[tuple[str, ...]] = []
    notes: dict[int, str] = {}
    shapes: list[str] = []
    for strategy in strategies:
        replica = (str(strategy.get("owner") or "-"),) if sharded else ()
        shapes.extend(rollout_lines(strategy))
        if strategy.get("error"):
            rows.append(
                (strategy["name"], "-", "-", "-", "-", "-", *replica, "error", strategy["error"])
            )
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
            note = _gates_line(env)
            if note is not None:
                notes[len(rows) + 1] = note  # printed under this row (after the header)
            rows.append(
                (
                    strategy["name"],
                    env["branch"],
                    _short((env.get("active") or {}).get("drySha")),
                    _short((env.get("proposed") or {}).get("drySha")),
                    # the hydrated commit: where a person sets the statuses the PR waits for
                    _short((env.get("proposed") or {}).get("hydratedSha")),
                    f"#{pr['number']}" if pr else "-",
                    *replica,
                    env.get("state", "unknown"),
                    reason.strip(),
                )
            )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for number, row in enumerate([header, *rows]):
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
        if number in notes:
            lines.append(notes[number])
    if shapes:
        lines += ["", "ROLLOUT", *shapes]
    return "\n".join(lines)
