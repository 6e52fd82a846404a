"""One environment on its strategy's page: its kind of state and reason, the running and
proposed commits (dry and hydrated, linked to the SCM), the commit statuses with their CI
target URLs, the PR, holds, pin, pause, freezes, gates, what the proposal changes, and the
buttons the caller's role allows; and its history from the ledger.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any

from promoter.http.pages import dashboard_html as h
from promoter.http.pages.actions import Allowed, buttons
from promoter.http.pages.kinds import badge, kind_of, proposes
from promoter.http.pages.links import Links
from promoter.http.pages.timeline import Entry, duration
from promoter.http.pages.when import when
from promoter.models import DryCommit

Files = list[tuple[str, str]] | None
"""The hydrated files the proposal changes (None: not read)."""


def _link(url: str, text: str) -> str:
    return (
        f'<a href="{escape(url)}">{text}</a>' if url.startswith(("https://", "http://")) else text
    )


def dry(sha: str | None, commits: dict[str, DryCommit], links: Links, now: datetime) -> str:
    """A dry commit: short SHA linked to the SCM, subject, author and when."""
    if not sha:
        return "<span class=muted>none</span>"
    code = _link(links.commit(sha), f"<code>{h.short(sha)}</code>")
    known = commits.get(sha)
    if known is None:
        return code
    return (
        f"{code} {escape(known.subject)} <span class=muted>· {escape(known.author)} · "
        f"{when(known.date, now)}</span>"
    )


def hydrated(commit: dict[str, Any] | None, links: Links) -> str:
    """The hydrated SHA CI and health checks report on, linked, with its statuses."""
    if not commit:
        return ""
    sha = str(commit.get("hydratedSha") or "")
    code = _link(links.commit(sha), f'<code title="{escape(sha)}">{h.short(sha)}</code>')
    statuses = "".join(
        f"<li>{h.badge(str(s.get('phase')))} "
        + _link(str(s.get("url") or ""), f"<code>{escape(str(s.get('key')))}</code>")
        + (f" {escape(str(s.get('description')))}" if s.get("description") else "")
        + "</li>"
        for s in commit.get("commitStatuses") or []
    )
    listed = (
        f'<ul class="statuses" aria-label="commit statuses">{statuses}</ul>' if statuses else ""
    )
    note = "<span class=muted>(CI and health report on this)</span>"
    return f'<dd class="hydrated">hydrated {code} {note}{listed}</dd>'


def files(env: dict[str, Any], found: Files, links: Links) -> str:
    """What the proposal changes: the hydrated files, and the full diff on the SCM."""
    active, proposed = env.get("active") or {}, env.get("proposed") or {}
    older, newer = active.get("hydratedSha"), proposed.get("hydratedSha")
    if found is None or not older or not newer or not proposes(env):
        return ""
    shown = found[:200]
    items = "".join(
        f'<li><span class="change change-{escape(s)}">{escape(s)}</span> '
        f"<code>{escape(p)}</code></li>"
        for s, p in shown
    )
    more = "<li>and more</li>" if len(found) > 200 else ""
    diff = links.compare(older, newer)
    full = f' <a href="{escape(diff)}">full diff on the SCM</a>' if diff else ""
    count = f"{len(shown)}{'+' if more else ''} file{'s' if len(shown) != 1 else ''}"
    return (
        f'<details class="files"><summary>What the proposal changes: {count}</summary>'
        f"<ul>{items or '<li>no file changes</li>'}{more}</ul>{full}</details>"
    )


def node(
    env: dict[str, Any],
    commits: dict[str, DryCommit],
    now: datetime,
    *,
    links: Links,
    changed: Files,
    allowed: Allowed,
) -> str:
    branch = escape(env["branch"])
    state = str(env.get("state") or "unknown")
    kind = kind_of(env)
    active, proposed = env.get("active") or {}, env.get("proposed") or {}
    rows = [
        f'<section class="env" id="env-{branch}" aria-labelledby="h-{branch}" '
        f'data-state="{escape(state)}" data-kind="{kind}">',
        f'<h2 id="h-{branch}">{branch} {badge(kind)} <span class="engine-state muted">'
        f"{escape(state)}</span></h2>",
        f'<p class="reason">{escape(str(env.get("reason") or ""))}</p><dl>',
        f"<dt>running</dt><dd class=active>{dry(active.get('drySha'), commits, links, now)}</dd>",
        hydrated(active, links),
        f"<dt>proposed</dt><dd class=proposed>"
        f"{dry(proposed.get('drySha'), commits, links, now)}</dd>",
        hydrated(proposed, links) if proposes(env) else "",
    ]
    pr = env.get("pullRequest")
    if pr:
        label = f"#{pr['number']} ({escape(str(pr['state']))})"
        rows.append(
            f"<dt>pull request</dt><dd class=pr>{_link(str(pr.get('url') or ''), label)}</dd>"
        )
    if env.get("labelsNotKept"):
        names = ", ".join(escape(str(name)) for name in env["labelsNotKept"])
        rows.append(f"<dt>labels not kept</dt><dd class=labels>{names}</dd>")
    healthy = env.get("lastHealthy")
    if healthy:
        rows.append(
            f"<dt>last healthy</dt><dd>{dry(healthy['drySha'], commits, links, now)} "
            f"since {when(healthy.get('healthySince'), now)}</dd>"
        )
    for hold in env.get("holds") or []:
        rows.append(
            f"<dt>hold</dt><dd class=hold><code>{h.short(hold['drySha'])}</code> "
            f"{escape(hold['reason'])} ({escape(hold['source'])}, {when(hold.get('since'), now)})"
            "</dd>"
        )
    pin = env.get("pin")
    if pin:
        rows.append(
            f"<dt>pinned</dt><dd class=pin><code>{h.short(pin['drySha'])}</code> "
            f"{escape(str(pin['reason']))}</dd>"
        )
    if env.get("paused"):
        rows.append(f"<dt>paused</dt><dd class=paused>{escape(str(env['paused']))}</dd>")
    for freeze in env.get("freezes") or []:
        until = f" until {escape(str(freeze['end']))}" if freeze.get("end") else ""
        rows.append(
            f"<dt>freeze</dt><dd class=freeze>{escape(str(freeze['reason']))}{until} "
            f"({escape(str(freeze['scope']))})</dd>"
        )
    rows.append("</dl>")
    gates = env.get("gates") or []
    if gates:
        rows.append('<ul class="gates" aria-label="gates">')
        rows.extend(
            f'<li class="gate-{escape(g["phase"])}">{h.badge(g["phase"])} '
            f"<code>{escape(g['name'])}</code> {escape(g['reason'])}</li>"
            for g in gates
        )
        rows.append("</ul>")
    rows.append(files(env, changed, links))
    rows.append(buttons(env, allowed))
    rows.append("</section>")
    return "\n".join(r for r in rows if r)


def history(branch: str, entries: list[Entry], now: datetime) -> str:
    items = "".join(
        f'<li class="{e.kind}">{when(e.at, now)} {h.badge(e.kind)} <code>{h.short(e.dry_sha)}'
        f"</code> {escape(e.text)} <span class=muted>({duration(e.seconds)})</span></li>"
        for e in entries
    )
    return (
        f'<section class="history" aria-label="history of {escape(branch)}">'
        f"<h3>{escape(branch)}</h3><ol>{items or '<li>nothing yet</li>'}</ol></section>"
    )
