"""The dashboard's audit page: the writes people and systems asked for, newest first.

Rendered from the answer of ``GET /api/v1/audit`` (the same filters, the same rule for
who may read it); every value is escaped, since most of it is what callers sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from promoter.http.pages import dashboard_html as h

FILTERS = ("strategy", "environment", "who", "action", "outcome")


def audit_page(answer: Response, params: Mapping[str, str]) -> str:
    """The page for an answer of the audit API (an error answer shows its error)."""
    data: dict[str, Any] = json.loads(bytes(answer.body))
    if answer.status_code >= 400:
        body = f"<h1>Audit</h1><p>{escape(str(data.get('error', '')))}</p>"
        return h.page("audit", body)
    shown = {k: params[k] for k in FILTERS if params.get(k)}
    caption = ", ".join(f"{k} {v}" for k, v in shown.items()) or "every write"
    rows = "".join(_row(e) for e in data["entries"]) or "<tr><td colspan=8>nothing</td></tr>"
    more = ""
    if data.get("next"):
        query = urlencode({**shown, "before": data["next"]})
        more = f'<p><a href="/audit?{escape(query)}">older</a></p>'
    body = (
        "<h1>Audit</h1><table><caption>"
        + escape(caption)
        + "</caption><tr><th scope=col>when</th><th scope=col>who</th>"
        "<th scope=col>from</th><th scope=col>what</th><th scope=col>where</th>"
        "<th scope=col>details</th><th scope=col>outcome</th><th scope=col>answer</th></tr>"
        + rows
        + "</table>"
        + more
    )
    return h.page("audit", body)


def _row(e: dict[str, Any]) -> str:
    where = " ".join(str(x) for x in (e.get("strategy"), e.get("environment")) if x)
    details = "; ".join(f"{k}: {v}" for k, v in (e.get("detail") or {}).items())
    origin = f" · {e['origin']}" if e.get("origin") else ""
    outcome = str(e.get("outcome") or "")
    answer = f"{e.get('status') or ''} {e.get('message') or ''}".strip()
    return (
        f'<tr class="audit {escape(outcome)}"><td><time datetime="{escape(str(e["at"]))}">'
        f"{escape(str(e['at'])[:19].replace('T', ' '))}</time></td>"
        f"<td>{escape(str(e['who']))} <span class=muted>({escape(str(e['via']))})</span></td>"
        f"<td>{escape(str(e.get('address') or ''))}{escape(origin)}</td>"
        f"<td>{escape(str(e['action']))}</td><td>{escape(where)}</td>"
        f"<td>{escape(details)}</td><td>{h.badge(outcome)}</td><td>{escape(answer)}</td></tr>"
    )
