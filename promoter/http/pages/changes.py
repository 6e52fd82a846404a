"""Where each change is: the newest dry commits down, the environments across, and in
each cell what that environment did with that commit: runs it, has it (an older commit
below the one it runs), proposes it, holds it out, reverted it, or not yet.

Read from the snapshot's environments (active and proposed dry commits, holds, reverts)
and the dry branch's history, newest first: a commit at or below an environment's
running one is in it, one between its running and proposed is on its way.
"""

from __future__ import annotations

from html import escape
from typing import Any

from promoter.config import short_name
from promoter.http.pages.links import Links
from promoter.models import DryCommit

SHOWN = 12
MARKS = {
    "runs": ("runs", "●"),
    "in": ("in", "✓"),
    "proposed": ("proposed", "→"),
    "held": ("held", "⊘"),
    "reverted": ("reverted", "↶"),
    "": ("not yet", "·"),
}
"""Each mark's words and icon (the stylesheet gives each its colour)."""


def mark(sha: str, position: dict[str, int], env: dict[str, Any]) -> str:
    """What ``env`` did with the commit ``sha`` (``position``: index newest first)."""
    if any(r.get("badDrySha") == sha for r in env.get("reverts") or []):
        return "reverted"
    if any(h.get("drySha") == sha for h in env.get("holds") or []):
        return "held"
    active = (env.get("active") or {}).get("drySha")
    proposed = (env.get("proposed") or {}).get("drySha")
    if sha == active:
        return "runs"
    here = position[sha]
    at = position.get(active or "")
    if at is not None and here > at:
        return "in"
    to = position.get(proposed or "")
    if to is not None and here >= to and (at is None or here < at):
        return "proposed"
    return ""


def table(history: list[DryCommit], environments: list[dict[str, Any]], links: Links) -> str:
    """The table of the newest ``SHOWN`` dry commits across ``environments``."""
    commits = history[:SHOWN]
    if not commits:
        return "<p class=muted>no dry commits read yet</p>"
    position = {c.sha: i for i, c in enumerate(history)}
    head = "".join(f"<th scope=col>{escape(short_name(e['branch']))}</th>" for e in environments)
    rows = []
    for c in commits:
        url = links.commit(c.sha)
        code = f"<code>{escape(c.sha[:8])}</code>"
        code = f'<a href="{escape(url)}">{code}</a>' if url else code
        cells = "".join(_cell(mark(c.sha, position, e)) for e in environments)
        rows.append(f"<tr><th scope=row>{code} {escape(c.subject)}</th>{cells}</tr>")
    return (
        '<table class="changes"><caption>Where each change is: the newest dry commits, '
        f"and what each environment did with them</caption><tr><th scope=col>dry commit</th>"
        f"{head}</tr>{''.join(rows)}</table>"
    )


def _cell(found: str) -> str:
    words, icon = MARKS[found]
    kind = found or "none"
    return (
        f'<td class="mark mark-{kind}"><span aria-hidden="true">{icon}</span> {escape(words)}</td>'
    )
