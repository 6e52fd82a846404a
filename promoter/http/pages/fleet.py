"""The fleet view's HTML: the counts per kind of state (each a link that filters by it),
the search and filters (kept in the URL), and one dense row per strategy with a compact
cell per environment: its kind's colour and icon, the dry SHA and how long, the reason on
hover (``title``), on focus of the row and when the row is expanded. Column headers sort.

``fleet.js`` filters as one types and moves through the rows by keyboard; without it the
form and the links do the same with page loads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from html import escape
from urllib.parse import quote, urlencode

from promoter.config import short_name
from promoter.http.pages.kinds import KINDS, badge
from promoter.http.pages.overview import FILTERS, PAGE, Cell, Overview, Query, Row
from promoter.http.pages.timeline import duration

SORT_NAMES = {"name": "name", "state": "state", "age": "oldest waiting", "repository": "repository"}


def _params(query: Query, raw: Mapping[str, str]) -> dict[str, str]:
    """The URL's filters and order as given (the search as typed)."""
    kept = {k: raw[k] for k in FILTERS if raw.get(k)}
    if query.sort != "name":
        kept["sort"] = query.sort
    if query.descending:
        kept["dir"] = "desc"
    return kept


def link(kept: Mapping[str, str], **change: str) -> str:
    """``/`` with the filters kept, ``change`` applied (an empty value drops a key)."""
    merged = {**kept, **change}
    query = urlencode({k: v for k, v in merged.items() if v})
    return "/?" + query if query else "/"


def render(found: Overview, raw: Mapping[str, str], total: int, now: datetime) -> str:
    """The whole fleet view (the frame's ``<main>`` content)."""
    kept = _params(found.query, raw)
    return "\n".join(
        [
            '<div class="fleet-head"><h1>Strategies</h1>',
            counts(found, kept),
            "</div>",
            _form(found, raw, kept),
            results(found, kept, total, now),
        ]
    )


def counts(found: Overview, kept: Mapping[str, str]) -> str:
    items = []
    for kind in KINDS:
        chosen = found.query.state == kind
        href = link(kept, state="" if chosen else kind, page="")
        current = ' aria-current="true"' if chosen else ""
        items.append(
            f'<li><a href="{escape(href)}" data-fleet{current}>{badge(kind)} '
            f'<strong class="count">{found.counts[kind]}</strong></a></li>'
        )
    return (
        '<ul class="counts" id="fleet-counts" aria-label="environments by state">'
        + "".join(items)
        + "</ul>"
    )


def _form(found: Overview, raw: Mapping[str, str], kept: Mapping[str, str]) -> str:
    def select(name: str, label: str, chosen: str, options: Iterable[tuple[str, str]]) -> str:
        items = "".join(
            f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>{escape(t)}</option>'
            for v, t in options
        )
        return f'<label>{label} <select name="{name}" data-filter>{items}</select></label>'

    any_ = [("", "any")]
    repositories = any_ + [(r, r) for r in found.repositories]
    query = found.query
    off = "" if query.descending else " disabled"
    direction = f'<input type="hidden" name="dir" value="desc"{off}>'
    return (
        '<form class="filters" id="fleet-filters" method="get" action="/" role="search">'
        '<label>search <input id="q" type="search" name="q" autocomplete="off" '
        'aria-keyshortcuts="/" placeholder="name, repository, label · state:failing env:prod" '
        f'value="{escape(raw.get("q", ""))}" data-filter></label>'
        + select("state", "state", query.state, any_ + [(k, w) for k, (w, _) in KINDS.items()])
        + select("repository", "repository", raw.get("repository", ""), repositories)
        + '<label>environment <input name="environment" size="9" autocomplete="off" '
        f'value="{escape(raw.get("environment", ""))}" data-filter></label>'
        + select("label", "label", raw.get("label", ""), any_ + [(x, x) for x in found.labels])
        + select("sort", "sort", query.sort, list(SORT_NAMES.items()))
        + direction
        + '<button type="submit" class="no-js">Filter</button> '
        + f'<a href="/" data-fleet{"" if kept else " hidden"}>clear</a></form>'
    )


def results(found: Overview, kept: Mapping[str, str], total: int, now: datetime) -> str:
    """The part a filter changes: how many match, the rows and the pager."""
    matched = f"{found.matched} of {total} strategies{' match' if kept else ''}"
    shown = ""
    if found.pages > 1:
        first = (found.page - 1) * PAGE + 1
        shown = f" · {first} to {first + len(found.rows) - 1} shown"
    return (
        '<div id="fleet-results">'
        f'<p class="muted matched" id="fleet-matched" aria-live="polite">{matched}{shown}</p>'
        + _table(found, kept, now)
        + _pager(found, kept)
        + "</div>"
    )


def _header(name: str, label: str, query: Query, kept: Mapping[str, str]) -> str:
    chosen = query.sort == name
    descending = chosen and not query.descending
    href = link(kept, sort="" if name == "name" else name, dir="desc" if descending else "",
                page="")  # fmt: skip
    sort = ""
    if chosen:
        sort = f' aria-sort="{"descending" if query.descending else "ascending"}"'
    arrow = ("▼" if query.descending else "▲") if chosen else ""
    return (
        f'<th scope="col"{sort}><a href="{escape(href)}" data-fleet>{label}'
        f'<span aria-hidden="true" class="arrow">{arrow}</span></a></th>'
    )


def _table(found: Overview, kept: Mapping[str, str], now: datetime) -> str:
    query = found.query
    head = (
        "<thead><tr>"
        + _header("name", "strategy", query, kept)
        + _header("repository", "repository", query, kept)
        + _header("state", "environments", query, kept)
        + _header("age", "oldest waiting", query, kept)
        + "</tr></thead>"
    )
    body = "".join(_row(r, now) for r in found.rows) or (
        '<tr><td colspan="4">no strategy matches</td></tr>'
    )
    return (
        '<table class="fleet overview"><caption class="sr-only">Each strategy: its environments'
        " with their state, dry commit and age; the reason on hover or focus</caption>"
        f"{head}<tbody>{body}</tbody></table>"
    )


def _row(row: Row, now: datetime) -> str:
    oldest = _age(row.oldest, now)
    owner = f' data-owner="{escape(row.owner)}"' if row.owner else ""
    since = f' data-oldest="{row.oldest.isoformat()}"' if row.oldest else ""
    return (
        f'<tr class="strategy" data-kind="{KIND_ORDER[row.urgency]}"{owner}{since}>'
        f'<th scope="row"><a class="row-link" href="/dashboard/{escape(quote(row.name))}">'
        f"{escape(row.name)}</a></th>"
        f'<td class="repo">{escape(row.repository)}</td>'
        f'<td><ul class="cells envs">{"".join(_cell(c, now) for c in row.cells)}</ul></td>'
        f'<td class="age">{oldest or "<span class=muted>—</span>"}</td></tr>'
    )


KIND_ORDER = {**dict(enumerate(KINDS)), 99: "waiting"}


def _cell(cell: Cell, now: datetime) -> str:
    words, icon = KINDS.get(cell.kind, (cell.kind, "?"))
    env = short_name(cell.branch)
    age = _age(cell.since, now)
    how = "waiting" if cell.waiting else "running"
    title = f"{env}: {words}" + (f" — {cell.reason}" if cell.reason else "")
    when = f"{how} {age}" if age else ""
    return (
        f'<li class="cell env-cell kind-{escape(cell.kind)}" data-kind="{escape(cell.kind)}" '
        f'title="{escape(title)}"><span class="icon" aria-hidden="true">{icon}</span>'
        f'<span class="where">{escape(env)}</span>'
        f'<span class="sr-only"> {escape(words)}</span>'
        f"<code>{escape(cell.sha[:7])}</code>"
        + (f'<span class="since" title="{escape(when)}">{escape(age)}</span>' if age else "")
        + f'<span class="reason">{escape(cell.reason)}</span></li>'
    )


def _age(at: datetime | None, now: datetime) -> str:
    if at is None:
        return ""
    return duration((now - at).total_seconds()).split(" ")[0]


def _pager(found: Overview, kept: Mapping[str, str]) -> str:
    if found.pages == 1:
        return ""
    prev = (
        f'<a rel="prev" href="{escape(link(kept, page=str(found.page - 1)))}" data-fleet>'
        "previous</a>"
        if found.page > 1
        else ""
    )
    nxt = (
        f'<a rel="next" href="{escape(link(kept, page=str(found.page + 1)))}" data-fleet>next</a>'
        if found.page < found.pages
        else ""
    )
    return (
        f'<nav class="pager" aria-label="pages">{prev} page {found.page} of {found.pages} '
        f"{nxt}</nav>"
    )
