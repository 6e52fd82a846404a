"""The overview at ``/``: every strategy's environments by kind of state, with their
reasons, searched, filtered and paged, and the count of environments of each kind.

Built for 1 to 10,000 strategies: a row is read from the strategy's last view in memory
(no git, no SCM), the filters and counts run over every row, and only one page of rows is
drawn. ``?q=`` searches names, repositories and labels; ``?repository=``, ``?state=``
(a kind), ``?environment=`` (a branch or its last part) and ``?label=`` filter;
``?page=`` pages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import urlencode

from promoter.config import PromotionStrategy, short_name
from promoter.daemon import StrategyView
from promoter.http.pages.kinds import KINDS, badge, kind_of

PAGE = 50
FILTERS = ("q", "repository", "state", "environment", "label")


@dataclass(frozen=True)
class Cell:
    branch: str
    kind: str
    reason: str


@dataclass(frozen=True)
class Row:
    name: str
    repository: str
    labels: tuple[str, ...]
    cells: tuple[Cell, ...]
    owner: str | None = None


def row_of(strategy: PromotionStrategy, view: StrategyView | None) -> Row:
    """One strategy's row, from its view alone (memory, no git)."""
    cells: list[Cell] = []
    snapshot = view.snapshot if view is not None else None
    if view is None or snapshot is None or view.decision is None:
        reason = (view.error or view.waiting) if view is not None else None
        kind = "error" if view is not None and view.error else "waiting"
        for configured in strategy.environments:
            cells.append(Cell(configured.branch, kind, reason or "not reconciled yet"))
    else:
        verdicts = {v.branch: v for v in view.decision.environments}
        for env in snapshot.environments:
            verdict = verdicts.get(env.branch)
            summary: dict[str, Any] = {
                "state": verdict.state.value if verdict else "unknown",
                "error": env.error or view.error,
                "gates": [{"name": g.name, "phase": g.phase.value} for g in verdict.gates]
                if verdict
                else [],
                "freezes": env.freezes,
                "paused": env.ledger.paused,
                "pin": env.ledger.pin,
                "holds": [{"drySha": h.dry_sha} for h in env.ledger.holds],
                "proposed": {"drySha": env.proposed.dry_sha} if env.proposed else None,
            }
            reason = verdict.reason if verdict else ""
            if view.error:
                reason = f"last reconcile failed: {view.error}"
            cells.append(Cell(env.branch, kind_of(summary), reason))
    return Row(strategy.name, strategy.repository, tuple(strategy.labels), tuple(cells))


def _matches(row: Row, params: Mapping[str, str], *, state: bool = True) -> bool:
    q = params.get("q", "").strip().lower()
    if q and not any(q in text.lower() for text in (row.name, row.repository, *row.labels)):
        return False
    if params.get("repository") and row.repository != params["repository"]:
        return False
    if params.get("label") and params["label"] not in row.labels:
        return False
    cells = _cells(row, params.get("environment", ""))
    if not cells:
        return False
    return not (state and params.get("state")) or any(c.kind == params["state"] for c in cells)


def _cells(row: Row, environment: str) -> tuple[Cell, ...]:
    if not environment:
        return row.cells
    return tuple(c for c in row.cells if environment in (c.branch, short_name(c.branch)))


@dataclass(frozen=True)
class Overview:
    rows: list[Row]
    """The page's rows."""
    matched: int
    counts: dict[str, int]
    """Environments of each kind among the strategies matching every filter but state."""
    page: int
    pages: int
    repositories: list[str]
    labels: list[str]


def overview(rows: Iterable[Row], params: Mapping[str, str]) -> Overview:
    """Filter ``rows``, count their environments' kinds, and cut out the page asked for."""
    all_rows = list(rows)
    environment = params.get("environment", "")
    counts: Counter[str] = Counter()
    matched: list[Row] = []
    for row in all_rows:
        if not _matches(row, params, state=False):
            continue
        counts.update(c.kind for c in _cells(row, environment))
        if _matches(row, params):
            matched.append(row)
    try:
        page = max(1, int(params.get("page", "1")))
    except ValueError:
        page = 1
    pages = max(1, -(-len(matched) // PAGE))
    page = min(page, pages)
    return Overview(
        rows=matched[(page - 1) * PAGE : page * PAGE],
        matched=len(matched),
        counts={kind: counts.get(kind, 0) for kind in KINDS},
        page=page,
        pages=pages,
        repositories=sorted({r.repository for r in all_rows}),
        labels=sorted({label for r in all_rows for label in r.labels}),
    )


def render(found: Overview, params: Mapping[str, str], total: int) -> str:
    """The overview's HTML: counts (each a link filtering by that kind), the filter form,
    the page of rows and the pager."""
    kept = {k: params[k] for k in FILTERS if params.get(k)}

    def link(**change: str) -> str:
        query = {**kept, **change}
        return "/?" + urlencode({k: v for k, v in query.items() if v})

    counts = "".join(
        f'<li><a href="{escape(link(state=kind, page=""))}">{badge(kind)} '
        f'<strong class="count">{found.counts[kind]}</strong></a></li>'
        for kind in KINDS
    )
    parts = [
        f"<h1>Strategies</h1><p class=muted>{found.matched} of {total} strategies"
        f"{' match' if kept else ''}</p>",
        f'<ul class="counts" aria-label="environments by state">{counts}</ul>',
        _form(found, kept),
        _table(found.rows),
        _pager(found, link),
    ]
    return "\n".join(parts)


def _form(found: Overview, kept: Mapping[str, str]) -> str:
    def select(name: str, label: str, options: Iterable[tuple[str, str]]) -> str:
        chosen = kept.get(name, "")
        items = "".join(
            f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>{escape(t)}</option>'
            for v, t in [("", "any"), *options]
        )
        return f'<label>{label} <select name="{name}">{items}</select></label>'

    return (
        '<form class="filters" method="get" action="/" role="search">'
        f'<label>search <input type="search" name="q" value="{escape(kept.get("q", ""))}">'
        "</label>"
        + select("state", "state", [(k, w) for k, (w, _) in KINDS.items()])
        + select("repository", "repository", [(r, r) for r in found.repositories])
        + f'<label>environment <input name="environment" size="10" '
        f'value="{escape(kept.get("environment", ""))}"></label>'
        + select("label", "label", [(x, x) for x in found.labels])
        + '<button type="submit">Filter</button> <a href="/">clear</a></form>'
    )


def _table(rows: list[Row]) -> str:
    body = "".join(
        f'<tr><th scope=row><a href="/dashboard/{escape(r.name)}">{escape(r.name)}</a>'
        f'<span class="owner" data-owner="{escape(r.owner or "")}"></span></th>'
        f"<td><code>{escape(r.repository)}</code></td><td><ul class=envs>"
        + "".join(
            f'<li class="env-cell" data-kind="{c.kind}"><span class=branch>'
            f"{escape(short_name(c.branch))}</span> {badge(c.kind)} "
            f'<span class="reason">{escape(c.reason)}</span></li>'
            for c in r.cells
        )
        + "</ul></td></tr>"
        for r in rows
    )
    return (
        '<table class="overview"><caption>Each strategy\'s environments, their state and '
        "why</caption><tr><th scope=col>strategy</th><th scope=col>repository</th>"
        f"<th scope=col>environments</th></tr>{body or _empty()}</table>"
    )


def _empty() -> str:
    return '<tr><td colspan="3">no strategy matches</td></tr>'


def _pager(found: Overview, link: Callable[..., str]) -> str:
    if found.pages == 1:
        return ""
    prev = (
        f'<a rel="prev" href="{escape(link(page=str(found.page - 1)))}">previous</a>'
        if found.page > 1
        else ""
    )
    nxt = (
        f'<a rel="next" href="{escape(link(page=str(found.page + 1)))}">next</a>'
        if found.page < found.pages
        else ""
    )
    return (
        f'<nav class="pager" aria-label="pages">{prev} page {found.page} of {found.pages} '
        f"{nxt}</nav>"
    )
