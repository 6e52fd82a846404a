"""The dashboard at ``/`` (for browsers) and ``/dashboard/{name}``: strategies at a glance,
one strategy's environments as columns, each environment's history, DORA figures; and
the audit of writes at ``/audit``.

Built from the same JSON views as the API, with the same rule for reading (the viewer
role); reads the daemon only through ``Views``. A caller the daemon does not know yet
gets the page's frame (401): its script asks for a token and fetches the page with it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from promoter.http import dashboard_html as h
from promoter.http.api import Api
from promoter.http.audit_page import audit_page
from promoter.http.dora_view import strategy_dora
from promoter.http.identity import Identity
from promoter.http.timeline import duration, timeline
from promoter.http.views import strategy_json
from promoter.models import DryCommit

OPERATIONS = (
    ("promote", "Promote", "Promote the proposed commit into {env} past its gates?"),
    ("hold", "Hold", "Hold the proposed commit out of {env}? Give a reason:"),
    ("release", "Release", "Release every hold and pause on {env}?"),
    ("revert", "Revert", "Open a revert of {env} to its last healthy commit?"),
)


def wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def refused(answer: Response) -> HTMLResponse:
    """The page's frame when the caller may not read it: 401 asks for a token."""
    if answer.status_code == 401:
        body = (
            "<h1>Who are you?</h1><p>This daemon shows its dashboard to the callers it"
            " knows. Paste your API token in the field above; it is kept in this tab"
            " only.</p>"
        )
        return HTMLResponse(h.page("sign in", body, auth="needed"), status_code=401)
    body = "<h1>Not for you</h1><p>Your identity has no viewer role here.</p>"
    return HTMLResponse(h.page("forbidden", body, auth="refused"), status_code=403)


class Dashboard:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.views = api.views

    async def index(self, request: Request) -> Response:
        """Every strategy (read in the thread pool: the dry history is a git call)."""
        who = await self.api.reader(request)
        if isinstance(who, Response):
            return refused(who)
        return await run_in_threadpool(self._index, who)

    async def audit(self, request: Request) -> Response:
        """The audit of writes, newest first (``?strategy=``, ``?who=``, ``?outcome=``)."""
        answer = await self.api.audit(request)
        if answer.status_code in (401, 403):
            return refused(answer)
        return HTMLResponse(audit_page(answer, request.query_params))

    def _index(self, who: Identity) -> HTMLResponse:
        now = datetime.now(UTC)
        rows = []
        for strategy in self.views.strategies():
            if not self.api.readable(who, strategy.name):
                continue
            detail = strategy_json(strategy, self.views.view(strategy.name))
            name = escape(strategy.name)
            envs = " ".join(
                f"<li>{escape(e['branch'])} {h.badge(e['state'])}</li>"
                for e in detail["environments"]
            )
            figures = strategy_dora(self.views, strategy.name, now=now)
            last = h.dora_cells(figures[-1]) if figures else "<td colspan=5>not yet</td>"
            rows.append(
                f'<tr><th scope=row><a href="/dashboard/{name}">{name}</a></th>'
                f"<td><code>{escape(strategy.repository)}</code></td>"
                f'<td><ul class="inline">{envs}</ul></td>{last}</tr>'
            )
        body = (
            "<h1>Strategies</h1><table><caption>Each strategy's environments and the DORA "
            "figures of its last environment</caption><tr><th scope=col>strategy</th>"
            "<th scope=col>repository</th><th scope=col>environments</th>"
            "<th scope=col>deployments</th><th scope=col>lead time</th>"
            "<th scope=col>change failure rate</th><th scope=col>time to restore</th>"
            "<th scope=col>last 30 days</th></tr>" + "".join(rows) + "</table>"
        )
        return HTMLResponse(h.page("strategies", h.who(who) + body))

    async def strategy(self, request: Request) -> Response:
        """One strategy (read in the thread pool: the dry history is a git call)."""
        name = request.path_params["name"]
        who = await self.api.reader(request, name)
        if isinstance(who, Response):
            return refused(who)
        return await run_in_threadpool(self._strategy, name, who)

    def _strategy(self, name: str, who: Identity) -> HTMLResponse:
        strategy = self.views.strategy(name)
        if strategy is None:
            body = f"<h1>Not found</h1><p>No strategy named {escape(name)!r}.</p>"
            return HTMLResponse(h.page("not found", body), status_code=404)
        view = self.views.view(name)
        detail = strategy_json(strategy, view)
        now = datetime.now(UTC)
        commits = self._commits(name, view)
        parts = [
            h.who(who),
            f"<h1>{escape(name)}</h1>",
            f'<p class="muted">repository <code>{escape(strategy.repository)}</code> · dry '
            f"branch <code>{escape(strategy.dry_branch)}</code> · reconciled "
            f"{escape(str(detail.get('reconciledAt') or 'not yet'))} · "
            f'<a href="/api/v1/strategies/{escape(name)}">JSON</a> · '
            f'<a href="/audit?strategy={escape(quote(name))}">audit</a></p>',
        ]
        if detail.get("error"):
            parts.append(f"<p>{h.badge('error')} {escape(str(detail['error']))}</p>")
        if detail.get("waiting"):
            parts.append(f"<p>{h.badge('waiting')} {escape(str(detail['waiting']))}</p>")
        parts.append(_rollout(detail))
        parts.append(
            '<div class="ops js-only" role="group" aria-label="freeze">'
            '<button type="button" data-freeze="freeze">Freeze this strategy</button>'
            '<button type="button" data-freeze="unfreeze">Unfreeze this strategy</button></div>'
        )
        parts.append('<div class="columns">')
        parts.extend(_column(env, commits, now) for env in detail["environments"])
        parts.append("</div><h2>History</h2>")
        if view is not None and view.snapshot is not None:
            parts.append('<div class="columns">')
            for env in view.snapshot.environments:
                parts.append(_history(env.branch, timeline(env.ledger, now=now)))
            parts.append("</div>")
        figures = strategy_dora(self.views, name, now=now)
        parts.append(
            "<h2>DORA, last 30 days</h2><table><caption>Per environment</caption>"
            + h.DORA_HEAD
            + "".join(
                f"<tr><th scope=row>{escape(f.environment)}</th>{h.dora_cells(f)}</tr>"
                for f in figures
            )
            + "</table>"
        )
        return HTMLResponse(h.page(name, "\n".join(parts), strategy=name))

    def _commits(self, name: str, view: Any) -> dict[str, DryCommit]:
        try:
            found = {c.sha: c for c in self.views.dry_history(name, limit=200)}
        except Exception:  # the page still reads without subjects
            found = {}
        if view is not None and view.snapshot is not None:
            for env in view.snapshot.environments:
                found.update({c.sha: c for c in env.changelog})
        return found


def _column(env: dict[str, Any], commits: dict[str, DryCommit], now: datetime) -> str:
    branch = escape(env["branch"])
    state = str(env.get("state") or "unknown")
    rows = [
        f'<section class="env" id="env-{branch}" aria-labelledby="h-{branch}" '
        f'data-state="{escape(state)}">',
        f'<h2 id="h-{branch}">{branch} {h.badge(state)}</h2>',
        f'<p class="reason">{escape(str(env.get("reason") or ""))}</p><dl>',
        f"<dt>running</dt><dd class=active>"
        f"{h.commit((env.get('active') or {}).get('drySha'), commits, now)}</dd>",
        f"<dt>proposed</dt><dd class=proposed>"
        f"{h.commit((env.get('proposed') or {}).get('drySha'), commits, now)}</dd>",
    ]
    pr = env.get("pullRequest")
    if pr:
        url, label = str(pr.get("url") or ""), f"#{pr['number']} ({escape(str(pr['state']))})"
        link = f'<a href="{escape(url)}">{label}</a>' if url.startswith("http") else label
        rows.append(f"<dt>pull request</dt><dd>{link}</dd>")
    if env.get("labelsNotKept"):
        names = ", ".join(escape(str(name)) for name in env["labelsNotKept"])
        rows.append(f"<dt>labels not kept</dt><dd class=labels>{names}</dd>")
    healthy = env.get("lastHealthy")
    if healthy:
        rows.append(f"<dt>last healthy</dt><dd>{h.commit(healthy['drySha'], commits, now)}</dd>")
    for hold in env.get("holds") or []:
        rows.append(
            f"<dt>hold</dt><dd class=hold><code>{h.short(hold['drySha'])}</code> "
            f"{escape(hold['reason'])} ({escape(hold['source'])})</dd>"
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
            f"<li>{h.badge(g['phase'])} <code>{escape(g['name'])}</code> {escape(g['reason'])}</li>"
            for g in gates
        )
        rows.append("</ul>")
    rows.append('<div class="ops js-only" role="group" aria-label="operations">')
    rows.extend(
        f'<button type="button" data-op="{op}" data-env="{branch}" '
        f'data-confirm="{escape(question.format(env=env["branch"]))}">{label}</button>'
        for op, label, question in OPERATIONS
    )
    rows.append(
        f'<button type="button" data-freeze="freeze" data-env="{branch}">Freeze</button>'
        f'<button type="button" data-freeze="unfreeze" data-env="{branch}">Unfreeze</button>'
    )
    rows.append("</div></section>")
    return "\n".join(rows)


def _history(branch: str, entries: list[Any]) -> str:
    items = "".join(
        f'<li class="{e.kind}"><time datetime="{e.at.isoformat()}">'
        f"{e.at:%Y-%m-%d %H:%M:%S}</time> {h.badge(e.kind)} <code>{h.short(e.dry_sha)}</code> "
        f"{escape(e.text)} <span class=muted>({duration(e.seconds)})</span></li>"
        for e in entries
    )
    return (
        f'<section class="history" aria-label="history of {escape(branch)}">'
        f"<h3>{escape(branch)}</h3><ol>{items or '<li>nothing yet</li>'}</ol></section>"
    )


def _rollout(detail: dict[str, Any]) -> str:
    """The rollout's shape when it is not a line: its waves (tiers) or what each
    environment waits for, each environment with its state."""
    rollout = detail.get("rollout")
    if not rollout:
        return ""
    states = {e["branch"]: str(e.get("state") or "unknown") for e in detail["environments"]}

    def member(branch: str) -> str:
        return f"{escape(branch.rsplit('/', 1)[-1])} {h.badge(states.get(branch, 'unknown'))}"

    if "tiers" in rollout:
        waves = []
        for tier in rollout["tiers"]:
            notes = [f"{tier['require']} of {len(tier['environments'])} go on"]
            if tier.get("maxParallel"):
                notes.append(f"{tier['maxParallel']} at once")
            members = ", ".join(member(b) for b in tier["environments"])
            waves.append(
                f"<li><strong>{escape(tier['name'])}</strong> "
                f'<span class="muted">({escape("; ".join(notes))})</span>: {members}</li>'
            )
        return (
            '<h2>Rollout</h2><ol class="waves" aria-label="tiers, in order">'
            + "".join(waves)
            + "</ol>"
        )
    rows = "".join(
        f"<li>{member(branch)} waits for "
        + (
            " and ".join(", ".join(escape(b.rsplit("/", 1)[-1]) for b in g) for g in groups)
            or "nothing"
        )
        + "</li>"
        for branch, groups in rollout["dependsOn"].items()
    )
    return f'<h2>Rollout</h2><ul class="waves">{rows}</ul>'
