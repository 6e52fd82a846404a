"""The dashboard's HTML pieces: the page frame, badges, commits, and small charts.

Server-rendered; every value from git, the SCM or a person is escaped. The page reads
fully without JavaScript; ``/static/dashboard.js`` adds live updates and the buttons.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from promoter.engine import DoraFigures
from promoter.http.access import Identity
from promoter.http.pages.timeline import duration
from promoter.models import DryCommit


def page(title: str, body: str, *, strategy: str = "", auth: str = "", event_id: str = "") -> str:
    """A whole page: header with the API token field, a message region, ``<main>``.

    No inline script or style (the CSP allows neither); ``auth`` (``needed``) tells the
    script the daemon wants a token before it shows the page; ``event_id`` (a strategy's
    page) is the change stream's id as of the page's making, which the script's first
    stream starts from."""
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)} · promoter</title>",
            '<link rel="stylesheet" href="/static/dashboard.css">',
            '<script src="/static/dashboard.js" defer></script></head><body>',
            '<a class="skip" href="#live">Skip to content</a>',
            '<header><nav aria-label="main"><a href="/">promoter</a> <a href="/audit">audit</a>'
            "</nav>",
            '<form class="js-only token" id="token-form">',
            '<label for="token">API token</label>',
            '<input id="token" type="password" autocomplete="off" size="18">',
            '<span id="live-state" aria-live="polite">static</span></form></header>',
            '<div id="message" role="alert" aria-live="assertive"></div>',
            f'<main id="live" data-strategy="{escape(strategy)}" data-auth="{escape(auth)}"'
            f' data-event-id="{escape(event_id)}">',
            body,
            "</main></body></html>",
        ]
    )


def who(identity: Identity) -> str:
    """Who the page was shown to."""
    how = {"local": "this machine, no token", "anonymous": "no credentials"}.get(
        identity.via, identity.via
    )
    return f'<p class="muted who">you are <strong>{escape(identity.name)}</strong> ({how})</p>'


def badge(state: str) -> str:
    return f'<span class="badge {escape(state)}">{escape(state)}</span>'


def short(sha: str | None) -> str:
    return escape((sha or "")[:8])


def age(at: datetime | None, now: datetime) -> str:
    if at is None:
        return ""
    return f"{duration((now - at).total_seconds())} ago"


def commit(sha: str | None, commits: dict[str, DryCommit], now: datetime) -> str:
    """A dry commit: short SHA (a link when the SCM gave one), subject, author, age."""
    if not sha:
        return "<span class=muted>none</span>"
    known = commits.get(sha)
    code = f"<code>{short(sha)}</code>"
    if known is None:
        return code
    if known.url.startswith(("https://", "http://")):
        code = f'<a href="{escape(known.url)}">{code}</a>'
    return (
        f"{code} {escape(known.subject)} <span class=muted>· {escape(known.author)}"
        f" · {escape(age(known.date, now))}</span>"
    )


def bars(values: tuple[int, ...], *, label: str) -> str:
    """A tiny inline SVG bar chart (one bar a day), with a text equivalent."""
    width, height = 3 * len(values), 24
    top = max((*values, 1))
    rects = "".join(
        f'<rect x="{3 * i}" y="{height - round(height * v / top)}" width="2" '
        f'height="{round(height * v / top)}"></rect>'
        for i, v in enumerate(values)
        if v
    )
    return (
        f'<svg class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{escape(label)}</title>{rects}</svg>'
    )


def dora_cells(f: DoraFigures) -> str:
    rate = "—" if f.change_failure_rate is None else f"{100 * f.change_failure_rate:.0f}%"
    return (
        f"<td>{f.deployments} ({f.deployment_frequency_per_day:.2f}/day)</td>"
        f"<td>{duration(f.lead_time_median_seconds)}</td>"
        f"<td>{rate}</td><td>{duration(f.time_to_restore_median_seconds)}</td>"
        f"<td>{bars(f.daily_deployments, label=f'deployments a day to {f.environment}')}</td>"
    )


DORA_HEAD = (
    "<tr><th scope=col>environment</th><th scope=col>deployments</th>"
    "<th scope=col>lead time (median)</th><th scope=col>change failure rate</th>"
    "<th scope=col>time to restore (median)</th><th scope=col>last 30 days</th></tr>"
)
