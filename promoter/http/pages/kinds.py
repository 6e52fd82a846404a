"""What kind of state an environment is in, for people: up to date, waiting, failing,
held, paused, frozen or error, each with its colour (the stylesheet's ``kind-*``) and an
icon, so that no state is told by colour alone, and waiting is never drawn as failing.

Read from an environment's JSON view (``views``): its engine state, gates, holds, pin,
pause, freezes and error, most urgent first.
"""

from __future__ import annotations

from html import escape
from typing import Any

KINDS: dict[str, tuple[str, str]] = {
    "error": ("error", "⚠"),
    "failing": ("failing", "✗"),
    "frozen": ("frozen", "❄"),
    "paused": ("paused", "‖"),
    "held": ("held", "⊘"),
    "waiting": ("waiting", "…"),
    "up-to-date": ("up to date", "✓"),
}
"""Each kind's words and icon, most urgent first (the order of the overview's counts)."""


NOT_ITS_OWN = frozenset(
    {
        "promoter/hold",
        "promoter/pin",
        "promoter/paused",
        "promoter/freeze",
        "promoter/blocked-change",
        "promoter/previous-environment",
    }
)
"""The promoter's own gates that tell a hold, pin, pause, freeze, a change waiting for
approval or an environment before this one: failed, they make it held, paused, frozen or
waiting, never failing."""


def kind_of(env: dict[str, Any]) -> str:
    """The kind of one environment of ``views.strategy_json`` (or a summary row with the
    same keys)."""
    state = str(env.get("state") or "unknown")
    if state == "error" or env.get("error"):
        return "error"
    gates = env.get("gates") or []
    failed = [g for g in gates if g.get("phase") == "failure" and g.get("name") not in NOT_ITS_OWN]
    if failed or state == "reverting":
        return "failing"
    if env.get("freezes"):
        return "frozen"
    if env.get("paused"):
        return "paused"
    proposed = (env.get("proposed") or {}).get("drySha")
    holds = env.get("holds") or []
    if env.get("pin") or any(h.get("drySha") == proposed for h in holds):
        return "held"
    if state == "up-to-date":
        return "up-to-date"
    return "waiting"


def badge(kind: str) -> str:
    """The kind as a badge: icon and words (the icon is hidden from screen readers)."""
    words, icon = KINDS.get(kind, (kind, "?"))
    return (
        f'<span class="kind kind-{escape(kind)}"><span aria-hidden="true">{icon}</span> '
        f"{escape(words)}</span>"
    )


def proposes(env: dict[str, Any]) -> bool:
    """Whether ``env`` proposes another dry commit than it runs (once merged, its ``-next``
    commit differs from the active one, but it proposes nothing)."""
    active, proposed = env.get("active") or {}, env.get("proposed") or {}
    return bool(proposed.get("drySha")) and proposed.get("drySha") != active.get("drySha")
