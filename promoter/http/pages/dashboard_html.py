"""The dashboard's HTML pieces: the page frame, badges, commits, and small charts.

Server-rendered; every value from git, the SCM or a person is escaped. The page reads
fully without JavaScript; ``/static/dashboard.js`` adds live updates and the buttons,
``/static/fleet.js`` the fleet view's filtering as one types and the keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape
from urllib.parse import urlencode

from promoter.engine import DoraFigures
from promoter.http.access import Identity
from promoter.http.pages.timeline import duration
from promoter.models import DryCommit


@dataclass(frozen=True)
class Visitor:
    """What the frame says about the person it is shown to: their session's CSRF token
    (for the script's writes), whether they signed in, whether sign-in is offered, and
    the path to come back to after signing in."""

    csrf: str = ""
    signed_in: str = ""
    sign_in: bool = False
    here: str = "/"


NOBODY = Visitor()
"""The frame for a caller the daemon says nothing more about."""

KEYS = (
    ("/", "search the strategies"),
    ("j or ↓", "next strategy or environment"),
    ("k or ↑", "previous strategy or environment"),
    ("Enter", "open the selected strategy"),
    ("x", "show or hide the selected row's reasons"),
    ("Esc", "leave the search, close this list"),
    ("?", "this list of keys"),
)


def _account(visitor: Visitor) -> str:
    """Sign-in or sign-out in the header, when sign-in is configured."""
    if visitor.signed_in:
        return (
            '<form class="account" method="post" action="/auth/logout">'
            f'<input type="hidden" name="csrf" value="{escape(visitor.csrf)}">'
            f"<span>{escape(visitor.signed_in)}</span>"
            '<button type="submit">Sign out</button></form>'
        )
    if visitor.sign_in:
        href = "/auth/login?" + urlencode({"next": visitor.here})
        return f'<a class="account sign-in" href="{escape(href)}">Sign in</a>'
    return ""


def page(
    title: str,
    body: str,
    *,
    strategy: str = "",
    auth: str = "",
    event_id: str = "",
    visitor: Visitor = NOBODY,
) -> str:
    """A whole page: header with sign-in and the API token field, a message region,
    ``<main>``, and the list of keys.

    No inline script or style (the CSP allows neither); ``auth`` (``needed``) tells the
    script the daemon wants a token before it shows the page; ``event_id`` (a strategy's
    page) is the change stream's id as of the page's making, which the script's first
    stream starts from."""
    keys = "".join(f"<dt><kbd>{escape(k)}</kbd></dt><dd>{escape(v)}</dd>" for k, v in KEYS)
    csrf = f'<meta name="csrf-token" content="{escape(visitor.csrf)}">' if visitor.csrf else ""
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            csrf,
            f"<title>{escape(title)} · promoter</title>",
            '<link rel="stylesheet" href="/static/dashboard.css">',
            '<script src="/static/dashboard.js" defer></script>',
            '<script src="/static/fleet.js" defer></script></head><body>',
            '<a class="skip" href="#live">Skip to content</a>',
            '<header><nav aria-label="main"><a href="/">promoter</a> <a href="/audit">audit</a>'
            "</nav>",
            '<div class="tools">',
            _account(visitor),
            '<form class="js-only token" id="token-form">',
            '<label for="token">API token</label>',
            '<input id="token" type="password" autocomplete="off" size="14">',
            '<span id="live-state" aria-live="polite">static</span></form>',
            '<button type="button" class="js-only keys-button" id="keys-button"'
            ' aria-keyshortcuts="?" aria-haspopup="dialog">Keys</button></div></header>',
            '<div id="message" role="alert" aria-live="assertive"></div>',
            f'<main id="live" data-strategy="{escape(strategy)}" data-auth="{escape(auth)}"'
            f' data-event-id="{escape(event_id)}">',
            body,
            "</main>",
            '<dialog id="keys" aria-labelledby="keys-title"><h2 id="keys-title">Keys</h2>'
            f'<dl class="keys">{keys}</dl><form method="dialog"><button>Close</button></form>'
            "</dialog></body></html>",
        ]
    )


def who(identity: Identity) -> str:
    """Who the page was shown to."""
    how = {
        "local": "this machine, no token",
        "anonymous": "no credentials",
        "oidc": "signed in",
    }.get(identity.via, identity.via)
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
