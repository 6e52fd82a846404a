"""The strategy's status page: what the promoter's checks on a PR link to.

One server-rendered HTML page per strategy (``GET /strategies/{name}``), built from
the same view as ``GET /api/v1/strategies/{name}``: per environment its state and
reason, every gate with its verdict, the running and proposed commits, the
promotion PR, the last healthy commit, holds and pauses. No script, and its style is a
file (``/static/status.css``: the CSP allows nothing inline); it reloads itself every
few seconds. Every value from git, the SCM or a person is escaped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from promoter.http.api import Api, strategy_json

REFRESH_SECONDS = 10


def status_page(api: Api) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of ``GET /strategies/{name}``, with the API's rule for reading."""

    async def endpoint(request: Request) -> Response:
        """The page the promoter's checks on a PR link to."""
        name = request.path_params["name"]
        who = await api.reader(request, name)
        if isinstance(who, Response):
            message = f"<p>reading {escape(name)} needs credentials; open the dashboard</p>"
            return HTMLResponse(message, status_code=who.status_code)
        strategy = api.views.strategy(name)
        if strategy is None:
            return HTMLResponse(f"<p>no strategy named {escape(name)!r}</p>", status_code=404)
        return HTMLResponse(render(strategy_json(strategy, api.views.view(name))))

    return endpoint


def render(detail: dict[str, Any]) -> str:
    """The page for one strategy, from ``views.strategy_json``."""
    name = escape(str(detail["name"]))
    reconciled = detail.get("reconciledAt") or "not yet"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{name} · promoter</title>",
        '<link rel="stylesheet" href="/static/status.css"></head><body>',
        f"<h1>{name}</h1>",
        f'<p class="meta">repository <code>{escape(str(detail["repository"]))}</code>'
        f" · dry branch <code>{escape(str(detail.get('dryBranch') or ''))}</code>"
        f" · reconciled {escape(str(reconciled))}"
        f' · <a href="/api/v1/strategies/{name}">JSON</a></p>',
    ]
    if detail.get("error"):
        parts.append(f'<p><span class="badge error">error</span> {escape(detail["error"])}</p>')
    parts.extend(_environment(env) for env in detail["environments"])
    parts.append("</body></html>")
    return "\n".join(parts)


def _environment(env: dict[str, Any]) -> str:
    state = str(env.get("state") or "unknown")
    rows = [
        f'<section id="{escape(env["branch"])}">',
        f"<h2>{escape(env['branch'])}{_badge(state)}</h2>",
        f"<div>{escape(str(env.get('reason') or ''))}</div>",
    ]
    gates = env.get("gates") or []
    if gates:
        rows.append("<ul>")
        rows.extend(
            f"<li>{_badge(g['phase'])} <code>{escape(g['name'])}</code>: {escape(g['reason'])}</li>"
            for g in gates
        )
        rows.append("</ul>")
    facts = [
        ("running", _commit(env.get("active"))),
        ("proposed", _commit(env.get("proposed"))),
        ("pull request", _pull_request(env.get("pullRequest"))),
        ("last healthy", _commit(env.get("lastHealthy"))),
        ("auto-merge", "yes" if env.get("autoMerge", True) else "no: a person merges"),
    ]
    for hold in env.get("holds") or []:
        facts.append(("hold", f"<code>{_short(hold['drySha'])}</code> {escape(hold['reason'])}"))
    if env.get("paused"):
        facts.append(("paused", escape(str(env["paused"]))))
    shown = [(k, v) for k, v in facts if v]
    if shown:
        rows.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in shown) + "</dl>")
    rows.append("</section>")
    return "\n".join(rows)


def _badge(phase: str) -> str:
    return f' <span class="badge {escape(phase)}">{escape(phase)}</span>'


def _short(sha: str | None) -> str:
    return escape((sha or "")[:8])


def _commit(commit: dict[str, Any] | None) -> str:
    if not commit or not commit.get("hydratedSha"):
        return ""
    dry = commit.get("drySha")
    text = f"dry <code>{_short(dry)}</code>" if dry else "no dry commit"
    return text + f" · hydrated <code>{_short(commit['hydratedSha'])}</code>"


def _pull_request(pr: dict[str, Any] | None) -> str:
    if not pr:
        return ""
    label = f"#{pr['number']} ({escape(str(pr.get('state') or ''))})"
    url = str(pr.get("url") or "")
    if url.startswith(("https://", "http://")):
        return f'<a href="{escape(url)}">{label}</a>'
    return label
