"""The fleet view's data at ``/``: one row per strategy, one cell per environment (its kind
of state, the dry SHA it runs or proposes, since when, and why), filtered, sorted, counted
and paged on the server (``fleet`` draws it).

Built for 1 to 10,000 strategies: a row is read from the strategy's last view in memory
(no git, no SCM), the filters, counts and sort run over every row, and only one page of
rows is drawn. ``?q=`` searches names, repositories and labels, and takes ``state:``,
``env:``, ``repo:`` and ``label:`` words; ``?repository=``, ``?state=`` (a kind),
``?environment=`` (a branch or its last part) and ``?label=`` filter; ``?sort=`` (name,
state, age, repository) and ``?dir=desc`` order; ``?page=`` pages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from promoter.config import PromotionStrategy, short_name
from promoter.daemon import KeptEnvironment, StrategyView
from promoter.http.pages.kinds import KINDS, kind_of

PAGE = 100
FILTERS = ("q", "repository", "state", "environment", "label")
SORTS = ("name", "state", "age", "repository")
"""The orders a person may ask for: by name; most urgent state first; the oldest change
still waiting first; by repository."""
WORDS = {"state": "state", "env": "environment", "environment": "environment",
         "repo": "repository", "repository": "repository", "label": "label"}  # fmt: skip
"""``key:value`` words of the search, and the filter each one is."""
URGENCY = {kind: i for i, kind in enumerate(KINDS)}


@dataclass(frozen=True)
class Cell:
    branch: str
    kind: str
    reason: str
    sha: str = ""
    """The dry commit shown: the one it proposes while a change waits, else the one it runs."""
    since: datetime | None = None
    """When the oldest change not yet here was made (``waiting``), else since when it runs
    what it runs."""
    waiting: bool = False
    short: str = field(init=False, compare=False)
    """The branch's last part (``prod``), which the environment filter also takes."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "short", short_name(self.branch))


@dataclass(frozen=True)
class Row:
    name: str
    repository: str
    labels: tuple[str, ...]
    cells: tuple[Cell, ...]
    owner: str | None = None
    urgency: int = field(init=False)
    """The most urgent kind among its environments (``KINDS``' order)."""
    oldest: datetime | None = field(init=False)
    """When the oldest change still waiting somewhere was made (None: none waits)."""

    def __post_init__(self) -> None:
        urgency = min((URGENCY.get(c.kind, len(URGENCY)) for c in self.cells), default=99)
        waiting = [c.since for c in self.cells if c.waiting and c.since is not None]
        object.__setattr__(self, "urgency", urgency)
        object.__setattr__(self, "oldest", min(waiting, default=None))


def row_of(strategy: PromotionStrategy, view: StrategyView | None) -> Row:
    """One strategy's row, from its view alone (memory, no git)."""
    cells: list[Cell] = []
    snapshot = view.snapshot if view is not None else None
    if view is None or snapshot is None or view.decision is None:
        reason = (view.error or view.waiting) if view is not None else None
        kind = "error" if view is not None and view.error and not view.outage else "waiting"
        for configured in strategy.environments:
            cells.append(Cell(configured.branch, kind, reason or "not reconciled yet"))
    else:
        verdicts = {v.branch: v for v in view.decision.environments}
        for env in snapshot.environments:
            verdict = verdicts.get(env.branch)
            summary = {
                "state": verdict.state.value if verdict else "unknown",
                "error": env.error or (None if view.outage else view.error),
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
                reason = view.failure()[1]
            cells.append(_cell(env, kind_of(summary), reason))
    return Row(strategy.name, strategy.repository, tuple(strategy.labels), tuple(cells))


def _cell(env: KeptEnvironment, kind: str, reason: str) -> Cell:
    running = env.active.dry_sha if env.active is not None else None
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if kind != "up-to-date" and proposed and proposed != running:
        dates = [c.date for c in env.changelog if c.date is not None]
        return Cell(env.branch, kind, reason, proposed, min(dates, default=None), waiting=True)
    return Cell(env.branch, kind, reason, running or "", env.active_since)


@dataclass(frozen=True)
class Query:
    """What a person asked of the overview, read from the URL."""

    words: tuple[str, ...] = ()
    repository: str = ""
    state: str = ""
    environment: str = ""
    label: str = ""
    sort: str = "name"
    descending: bool = False
    page: int = 1

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Query:
        found = {k: params.get(k, "").strip() for k in FILTERS if k != "q"}
        words = []
        for word in params.get("q", "").split():
            key, colon, value = word.partition(":")
            if colon and key.lower() in WORDS and value:
                found[WORDS[key.lower()]] = value
            else:
                words.append(word.lower())
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        sort = params.get("sort", "name")
        return cls(
            words=tuple(words),
            sort=sort if sort in SORTS else "name",
            descending=params.get("dir") == "desc",
            page=page,
            **found,
        )


def _named(row: Row, query: Query) -> bool:
    """Whether ``row`` matches the search's words, the repository and the label."""
    for word in query.words:
        if not any(word in text.lower() for text in (row.name, row.repository, *row.labels)):
            return False
    if query.repository and row.repository != query.repository:
        return False
    return not query.label or query.label in row.labels


def _cells(row: Row, environment: str) -> tuple[Cell, ...]:
    if not environment:
        return row.cells
    return tuple(c for c in row.cells if environment in (c.branch, c.short))


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
    query: Query = Query()


def _key(query: Query) -> Callable[[Row], Any]:
    if query.sort == "state":
        return lambda r: (r.urgency, r.name)
    if query.sort == "repository":
        return lambda r: (r.repository, r.name)
    if query.sort == "age":  # the oldest waiting first; rows where nothing waits last
        return lambda r: (r.oldest is None, r.oldest.timestamp() if r.oldest else 0.0, r.name)
    return lambda r: r.name


def overview(rows: Iterable[Row], params: Mapping[str, str]) -> Overview:
    """Filter ``rows``, count their environments' kinds, sort them, cut out the page."""
    query = Query.of(params)
    all_rows = list(rows)
    counts: Counter[str] = Counter()
    matched: list[Row] = []
    for row in all_rows:
        if not _named(row, query):
            continue
        cells = _cells(row, query.environment)
        if not cells:
            continue
        counts.update(c.kind for c in cells)
        if not query.state or any(c.kind == query.state for c in cells):
            matched.append(row)
    matched.sort(key=_key(query), reverse=query.descending)
    pages = max(1, -(-len(matched) // PAGE))
    page = min(query.page, pages)
    return Overview(
        rows=matched[(page - 1) * PAGE : page * PAGE],
        matched=len(matched),
        counts={kind: counts.get(kind, 0) for kind in KINDS},
        page=page,
        pages=pages,
        repositories=sorted({r.repository for r in all_rows}),
        labels=sorted({label for r in all_rows for label in r.labels}),
        query=query,
    )
