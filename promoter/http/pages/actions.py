"""The buttons of an environment: only the operations that can do something now, in its
state, and that the caller's role allows there (``roles.OPERATION_ROLES``, as the API
checks them), each labelled and asking as its row of the table of operations says
(``promoter.config.operations``), and saying what it will do before it does it.

Merge only while a PR waits for a person with every gate passing (or a revert waits);
Approve only while an open PR waits for an approval; Hold while a change is proposed and
not held; Release while held or paused; Pin or Unpin, Freeze or Unfreeze, never both;
Revert when the last healthy commit is not what runs. The break-glass Promote is set
apart, behind a confirmation that names the gates and holds it skips. A button not drawn
is refused by the API anyway; ``dashboard.js`` asks before each.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from promoter.config import OPERATIONS, short_name
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
APPROVAL = "promoter/approval"


def _open_pr(env: dict[str, Any]) -> dict[str, Any] | None:
    pr = env.get("pullRequest") or {}
    return pr if pr.get("state") == "open" else None


def _revert_waiting(env: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in env.get("reverts") or [] if r.get("inFlight")), None)


def _held(env: dict[str, Any]) -> bool:
    proposed = (env.get("proposed") or {}).get("drySha")
    return any(h.get("drySha") == proposed for h in env.get("holds") or [])


def offered(op: str, env: dict[str, Any]) -> bool:
    """Whether ``op`` can do something in ``env`` now."""
    gates = env.get("gates") or []
    if op == "merge":
        return _revert_waiting(env) is not None or (
            _open_pr(env) is not None and env.get("state") == "ready"
        )
    if op == "approve":
        waits = any(g.get("name") == APPROVAL and g.get("phase") != "success" for g in gates)
        return _open_pr(env) is not None and waits
    if op == "hold":
        return proposes(env) and not _held(env) and not env.get("pin")
    if op == "release":
        return bool(env.get("holds") or env.get("paused"))
    if op == "pin":
        return not env.get("pin") and bool((env.get("active") or {}).get("drySha"))
    if op == "unpin":
        return bool(env.get("pin"))
    if op == "revert":
        active = (env.get("active") or {}).get("drySha")
        healthy = (env.get("lastHealthy") or {}).get("drySha")
        return bool(active and healthy and healthy != active) and not _revert_waiting(env)
    return False


def frozen_here(env: dict[str, Any], strategy: str) -> bool:
    """Whether a person froze this very environment (what Unfreeze on it lifts)."""
    scope = f"{env['branch']} of {strategy}"
    return any(f.get("scope") == scope and not f.get("end") for f in env.get("freezes") or [])


def strategy_frozen(strategy: str, detail: dict[str, Any]) -> bool:
    """Whether a person froze the whole strategy (what its Unfreeze lifts)."""
    scope = f"strategy {strategy}"
    return any(
        f.get("scope") == scope and not f.get("end")
        for env in detail["environments"]
        for f in env.get("freezes") or []
    )


def _question(op: str, question: str, env: dict[str, Any]) -> str:
    branch = str(env["branch"])
    pr = (_open_pr(env) or {}).get("number", "")
    revert = _revert_waiting(env)
    if op == "merge" and revert is not None:
        return (
            f"Merge revert PR #{revert.get('pr')} into {branch}? It brings back"
            f" {str(revert.get('restoredDrySha'))[:8]}, the last healthy commit."
        )
    return question.format(env=branch, pr=pr)


def buttons(env: dict[str, Any], allowed: Allowed, *, strategy: str = "") -> str:
    """The operations group of one environment, and its break-glass section."""
    branch = str(env["branch"])
    active = (env.get("active") or {}).get("drySha") or ""
    out = []
    for op, label, question in BUTTONS:
        if not (offered(op, env) and allowed(op, branch)):
            continue
        default = f' data-default="{escape(active)}"' if op == "pin" else ""
        asked = _question(op, question, env)
        out.append(
            f'<button type="button" data-op="{op}" data-env="{escape(branch)}"{default} '
            f'title="{escape(asked)}" data-confirm="{escape(asked)}">{label}</button>'
        )
    if allowed("freeze", branch):
        name = short_name(branch)
        if frozen_here(env, strategy):
            out.append(
                f'<button type="button" data-freeze="unfreeze" data-env="{escape(branch)}" '
                f'title="Lift the freeze of {escape(branch)}">Unfreeze {escape(name)}</button>'
            )
        else:
            out.append(
                f'<button type="button" data-freeze="freeze" data-env="{escape(branch)}" '
                f'title="Stop every promotion into {escape(branch)} until unfrozen">'
                f"Freeze {escape(name)}</button>"
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


def strategy_buttons(allowed_everywhere: bool, *, frozen: bool = False) -> str:
    """The strategy's Freeze or Unfreeze, for admins of every environment."""
    if not allowed_everywhere:
        return ""
    button = (
        '<button type="button" data-freeze="unfreeze" title="Lift the freeze of the whole'
        ' strategy">Unfreeze this strategy</button>'
        if frozen
        else '<button type="button" data-freeze="freeze" title="Stop every promotion of this'
        ' strategy until unfrozen">Freeze this strategy</button>'
    )
    return f'<div class="ops js-only" role="group" aria-label="freeze">{button}</div>'
