"""A strategy's environments drawn as a pipeline: columns by depth (each environment one
column right of the deepest one it waits for; a tier is a column), an edge from each
environment to each that waits for it (``engine.dag.shape_of``: tiers, ``dependsOn``, or
the line), each node with its kind of state. An inline SVG, styled by the stylesheet;
each node links to the environment's details below it.
"""

from __future__ import annotations

from html import escape

from promoter.config import PromotionStrategy, short_name
from promoter.engine import shape_of
from promoter.http.pages.kinds import KINDS

WIDTH, HEIGHT, GAP_X, GAP_Y, PAD = 170, 46, 60, 16, 8


def upstreams(strategy: PromotionStrategy) -> list[list[int]]:
    """For each environment, the indices of the environments it waits for."""
    found: list[list[int]] = []
    for i, (groups, _) in enumerate(shape_of(strategy)):
        if groups is None:
            found.append([i - 1] if i > 0 else [])
        else:
            found.append(sorted({j for g in groups for j in g.indices}))
    return found


def depths(waits: list[list[int]]) -> list[int]:
    """Each environment's column: 0 for one that waits for none, else one more than the
    deepest it waits for (``waits`` is a DAG, as the configuration checks)."""
    out: list[int] = []
    for i, ups in enumerate(waits):
        out.append(1 + max((out[j] for j in ups if j < i), default=-1) if ups else 0)
    return out


def graph(strategy: PromotionStrategy, kinds: dict[str, str]) -> str:
    """The SVG of the pipeline; ``kinds`` gives each branch's kind of state."""
    envs = [e.branch for e in strategy.environments]
    waits = upstreams(strategy)
    column = depths(waits)
    rows: dict[int, int] = {}
    place: list[tuple[int, int]] = []
    for c in column:
        place.append((c, rows.get(c, 0)))
        rows[c] = rows.get(c, 0) + 1
    top = 18 if strategy.tiers else 0

    def xy(i: int) -> tuple[int, int]:
        c, r = place[i]
        return PAD + c * (WIDTH + GAP_X), top + PAD + r * (HEIGHT + GAP_Y)

    edges = []
    for i, ups in enumerate(waits):
        for j in ups:
            (x1, y1), (x2, y2) = xy(j), xy(i)
            edges.append(
                f'<path class="edge" d="M{x1 + WIDTH} {y1 + HEIGHT // 2} '
                f"C{x1 + WIDTH + GAP_X // 2} {y1 + HEIGHT // 2} {x2 - GAP_X // 2} "
                f'{y2 + HEIGHT // 2} {x2 - 4} {y2 + HEIGHT // 2}" marker-end="url(#arrow)"/>'
            )
    nodes = []
    for i, branch in enumerate(envs):
        x, y = xy(i)
        kind = kinds.get(branch, "waiting")
        words, icon = KINDS.get(kind, (kind, "?"))
        nodes.append(
            f'<a href="#env-{escape(branch)}" class="node kind-{escape(kind)}">'
            f'<rect x="{x}" y="{y}" width="{WIDTH}" height="{HEIGHT}" rx="6"/>'
            f'<text x="{x + 10}" y="{y + 19}" class="name">{escape(short_name(branch))}'
            f'</text><text x="{x + 10}" y="{y + 37}" class="state">{icon} {escape(words)}</text>'
            "</a>"
        )
    labels = [
        f'<text class="tier" x="{PAD + n * (WIDTH + GAP_X)}" y="12">{escape(t.name)}</text>'
        for n, t in enumerate(strategy.tiers)
    ]
    width = PAD * 2 + (max(column, default=0) + 1) * (WIDTH + GAP_X) - GAP_X
    height = top + PAD * 2 + max(rows.values(), default=1) * (HEIGHT + GAP_Y) - GAP_Y
    described = ", ".join(
        f"{envs[i]} waits for {' and '.join(envs[j] for j in ups) or 'nothing'}"
        for i, ups in enumerate(waits)
    )
    return (
        f'<svg class="pipeline" role="group" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="pipeline-title">'
        f'<title id="pipeline-title">pipeline: {escape(described)}</title>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0 0L10 5L0 10z"/></marker></defs>'
        + "".join(labels + edges + nodes)
        + "</svg>"
    )
