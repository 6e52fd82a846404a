"""The buttons of an environment, offered by the caller's role (``roles.OPERATION_ROLES``
on that environment, as the API checks them), each labelled and asking as its row of the
table of operations says (``promoter.config.operations``): Merge (through the head guard)
and Approve for approvers, Hold, Release, Pin, Unpin and Revert for operators, Freeze and
Unfreeze for admins, and the break-glass Promote set apart, behind a confirmation that
names the gates and holds it skips. A button the role does not allow is not drawn (the
API refuses it anyway); ``dashboard.js`` asks before each.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from promoter.config import OPERATIONS
from promoter.http.pages.kinds import proposes

Allowed = Callable[[str, str], bool]
"""``allowed(operation, environment)``: whether the caller's role allows it there."""

DRAWN = ("merge", "approve", "hold", "release", "pin", "unpin", "revert")
"""The operations drawn as an environment's buttons, in the order drawn."""
BUTTONS: tuple[tuple[str, str, str], ...] = tuple(
    (op.name, op.button, op.question)
    for op in sorted(
        (op for op in OPERATIONS if op.name in DRAWN), key=lambda o: DRAWN.index(o.name)
    )
)
"""Each button's operation, label and question."""


def _offered(op: str, env: dict[str, Any]) -> bool:
    """Whether ``op`` has anything to act on in ``env`` now."""
    pr = env.get("pullRequest") or {}
    if op in ("merge", "approve"):
        return pr.get("state") == "open"
    if op == "release":
        return bool(env.get("holds") or env.get("paused"))
    if op == "pin":
        return not env.get("pin") and bool(env.get("active"))
    if op == "unpin":
        return bool(env.get("pin"))
    if op == "revert":
        return bool(env.get("active"))
    return True


def buttons(env: dict[str, Any], allowed: Allowed) -> str:
    """The operations group of one environment, and its break-glass section."""
    branch = str(env["branch"])
    pr = (env.get("pullRequest") or {}).get("number", "")
    active = (env.get("active") or {}).get("drySha") or ""
    out = []
    for op, label, question in BUTTONS:
        if not (_offered(op, env) and allowed(op, branch)):
            continue
        default = f' data-default="{escape(active)}"' if op == "pin" else ""
        out.append(
            f'<button type="button" data-op="{op}" data-env="{escape(branch)}"{default} '
            f'data-confirm="{escape(question.format(env=branch, pr=pr))}">{label}</button>'
        )
    if allowed("freeze", branch):
        out.append(
            f'<button type="button" data-freeze="freeze" data-env="{escape(branch)}">Freeze'
            f'</button><button type="button" data-freeze="unfreeze" data-env="{escape(branch)}">'
            "Unfreeze</button>"
        )
    group = (
        f'<div class="ops js-only" role="group" aria-label="operations on {escape(branch)}">'
        + "".join(out)
        + "</div>"
        if out
        else ""
    )
    return group + _break_glass(env, allowed)


def skipped(env: dict[str, Any]) -> list[str]:
    """What a break-glass promotion of ``env`` goes past: gates not passing, holds, a pin,
    a pause and freezes."""
    found = [
        f"gate {g['name']} ({g['phase']})"
        for g in env.get("gates") or []
        if g.get("phase") != "success"
    ]
    found += [f"hold on {str(h['drySha'])[:8]}" for h in env.get("holds") or []]
    if env.get("pin"):
        found.append(f"pin to {str(env['pin']['drySha'])[:8]}")
    if env.get("paused"):
        found.append("the pause")
    found += [f"freeze ({f['scope']})" for f in env.get("freezes") or []]
    return found


def _break_glass(env: dict[str, Any], allowed: Allowed) -> str:
    branch = str(env["branch"])
    proposed = (env.get("proposed") or {}).get("drySha")
    if not proposes(env) or not allowed("promote", branch):
        return ""
    skips = skipped(env)
    what = "; ".join(skips) if skips else "nothing: every gate passes"
    question = (
        f"Break glass: promote {str(proposed)[:8]} into {branch} now, skipping {what}? "
        "It is recorded with your name and reason. Why:"
    )
    return (
        '<details class="break-glass js-only-block"><summary>Break glass</summary>'
        f"<p>Promote past the gates. Skips: {escape(what)}.</p>"
        f'<button type="button" class="danger" data-op="promote" data-env="{escape(branch)}" '
        f'data-confirm="{escape(question)}">Promote past the gates</button></details>'
    )


def strategy_buttons(allowed_everywhere: bool) -> str:
    """The strategy's Freeze and Unfreeze, for admins of every environment."""
    if not allowed_everywhere:
        return ""
    return (
        '<div class="ops js-only" role="group" aria-label="freeze">'
        '<button type="button" data-freeze="freeze">Freeze this strategy</button>'
        '<button type="button" data-freeze="unfreeze">Unfreeze this strategy</button></div>'
    )
