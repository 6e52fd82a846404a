"""The dashboard at ``/`` (for browsers) and ``/dashboard/{name}``: every strategy at a
glance (``overview``), one strategy's pipeline, environments (``node``), where each change
is (``changes``), each environment's history and DORA figures; and the audit of writes at
``/audit``.

Built from the same JSON views as the API, with the same rule for reading (the viewer
role); reads the daemon only through ``Views``. A caller the daemon does not know yet
gets the page's frame (401): its script asks for a token and fetches the page with it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from promoter.config import PromotionStrategy, short_name
from promoter.daemon import StrategyView
from promoter.http.access import OPERATION_ROLES, Identity, Scope
from promoter.http.api import Api, EventStream, strategy_dora, strategy_json
from promoter.http.pages import changes, overview
from promoter.http.pages import dashboard_html as h
from promoter.http.pages.actions import Allowed, strategy_buttons
from promoter.http.pages.audit_page import audit_page
from promoter.http.pages.kinds import kind_of, proposes
from promoter.http.pages.links import links_for
from promoter.http.pages.node import Files, history, node
from promoter.http.pages.pipeline import graph
from promoter.http.pages.timeline import timeline
from promoter.http.pages.when import when
from promoter.models import DryCommit

log = logging.getLogger("promoter.dashboard")

STATIC = Path(__file__).parent / "static"
"""The dashboard's and the status page's script and style, served at ``/static``."""
DIFFS_KEPT = 256
"""Proposals' changed files kept (two commits' diff never changes)."""


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
    def __init__(self, api: Api, events: EventStream | None = None) -> None:
        self.api = api
        self.views = api.views
        self.events = events or EventStream(api.views)
        self._diffs: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._rows: dict[str, tuple[PromotionStrategy, StrategyView | None, overview.Row]] = {}

    async def index(self, request: Request) -> Response:
        """Every strategy the caller reads, filtered and paged (``overview``)."""
        who = await self.api.reader(request)
        if isinstance(who, Response):
            return refused(who)
        params = dict(request.query_params)
        return await run_in_threadpool(self._index, who, params)

    async def audit(self, request: Request) -> Response:
        """The audit of writes, newest first (``?strategy=``, ``?who=``, ``?outcome=``)."""
        answer = await self.api.audit(request)
        if answer.status_code in (401, 403):
            return refused(answer)
        return HTMLResponse(audit_page(answer, request.query_params))

    def _index(self, who: Identity, params: dict[str, str]) -> HTMLResponse:
        readable = [s for s in self.views.strategies() if self.api.readable(who, s.name)]
        rows = (self._row(s) for s in readable)
        found = overview.overview(rows, params)
        body = h.who(who) + overview.render(found, params, len(readable))
        return HTMLResponse(h.page("strategies", body))

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
        event_id = self.events.page_id(name)  # before the page is made
        view = self.views.view(name)
        detail = strategy_json(strategy, view)
        now = datetime.now(UTC)
        history_ = self._history(name)
        commits = self._commits(history_, view)
        links = links_for(*self.views.scm_web(strategy.repository))
        allowed = self._allowed(who, name)
        owner = self.views.owner(name)
        replica = f"replica <code>{escape(owner)}</code> · " if owner is not None else ""
        parts = [
            h.who(who),
            f"<h1>{escape(name)}</h1>",
            f'<p class="muted">repository <code>{escape(strategy.repository)}</code> · dry '
            f"branch <code>{escape(strategy.dry_branch)}</code> · {replica}reconciled "
            f"{when(detail.get('reconciledAt'), now) or 'not yet'} · "
            f'<a href="/api/v1/strategies/{escape(name)}">JSON</a> · '
            f'<a href="/audit?strategy={escape(quote(name))}">audit</a></p>',
        ]
        if detail.get("error"):
            parts.append(f"<p>{h.badge('error')} {escape(str(detail['error']))}</p>")
        if detail.get("waiting"):
            parts.append(f"<p>{h.badge('waiting')} {escape(str(detail['waiting']))}</p>")
        kinds = {e["branch"]: kind_of(e) for e in detail["environments"]}
        parts.append('<h2 class="sr-only">Pipeline</h2>' + graph(strategy, kinds))
        parts.append(_rollout(detail))
        everywhere = all(allowed("freeze", e["branch"]) for e in detail["environments"])
        parts.append(strategy_buttons(everywhere))
        parts.append('<div class="columns">')
        parts.extend(
            node(
                env,
                commits,
                now,
                links=links,
                changed=self._changed(name, env),
                allowed=allowed,
            )
            for env in detail["environments"]
        )
        parts.append("</div><h2>Where each change is</h2>")
        parts.append(changes.table(history_, detail["environments"], links))
        parts.append("<h2>History</h2>")
        if view is not None and view.snapshot is not None:
            parts.append('<div class="columns">')
            for env in view.snapshot.environments:
                running = env.active.dry_sha if env.active is not None else None
                entries = timeline(env.ledger, now=now, running=running, moved_at=env.active_since)
                parts.append(history(env.branch, entries, now))
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
        return HTMLResponse(h.page(name, "\n".join(parts), strategy=name, event_id=event_id))

    def _row(self, strategy: PromotionStrategy) -> overview.Row:
        """A strategy's overview row, made again only when its view or configuration is
        another object than last time (a reconcile replaces the view)."""
        view = self.views.view(strategy.name)
        kept = self._rows.get(strategy.name)
        if kept is not None and kept[0] is strategy and kept[1] is view:
            return kept[2]
        row = overview.row_of(strategy, view)
        self._rows[strategy.name] = (strategy, view, row)
        return row

    def _allowed(self, who: Identity, name: str) -> Allowed:
        policy = self.api.access.policy

        def allowed(operation: str, environment: str) -> bool:
            return policy.allows(who, OPERATION_ROLES[operation], Scope(name, (environment,)))

        return allowed

    def _history(self, name: str) -> list[DryCommit]:
        try:
            return self.views.dry_history(name, limit=200)
        except Exception:  # the page still reads without subjects
            log.warning("dry history unavailable", extra={"strategy": name})
            return []

    def _commits(self, found: list[DryCommit], view: Any) -> dict[str, DryCommit]:
        commits = {c.sha: c for c in found}
        if view is not None and view.snapshot is not None:
            for env in view.snapshot.environments:
                commits.update({c.sha: c for c in env.changelog})
        return commits

    def _changed(self, name: str, env: dict[str, Any]) -> Files:
        """The proposal's changed files, read in the mirror once per pair of commits."""
        older = (env.get("active") or {}).get("hydratedSha")
        newer = (env.get("proposed") or {}).get("hydratedSha")
        if not older or not newer or not proposes(env):
            return None
        key = (older, newer)
        if key not in self._diffs:
            try:
                self._diffs[key] = self.views.changed_files(name, env["branch"])
            except Exception:
                log.warning("changed files unavailable", extra={"strategy": name})
                return None
            while len(self._diffs) > DIFFS_KEPT:
                del self._diffs[next(iter(self._diffs))]
        return self._diffs[key]


def _rollout(detail: dict[str, Any]) -> str:
    """The rollout's shape when it is not a line: its waves (tiers) or what each
    environment waits for, each environment with its state."""
    rollout = detail.get("rollout")
    if not rollout:
        return ""
    states = {e["branch"]: str(e.get("state") or "unknown") for e in detail["environments"]}

    def member(branch: str) -> str:
        return f"{escape(short_name(branch))} {h.badge(states.get(branch, 'unknown'))}"

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
        + (" and ".join(", ".join(escape(short_name(b)) for b in g) for g in groups) or "nothing")
        + "</li>"
        for branch, groups in rollout["dependsOn"].items()
    )
    return f'<h2>Rollout</h2><ul class="waves">{rows}</ul>'
