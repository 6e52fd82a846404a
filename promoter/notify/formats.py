"""The bodies a sink receives (CloudEvents 1.0 structured JSON, Slack, Microsoft Teams)
and their HMAC-SHA256 signature.

What a message quotes (commit subjects, reasons, people's names) is escaped for the
sink's markup (``promoter.markup``), and the only links are the ones the promoter built
or the SCM gave (the dashboard, the pull request): Slack's mrkdwn has ``&<>`` escaped
and no auto-linking (``verbatim``); Teams' card shows it as ``TextRun``s, which no
Markdown reaches. CloudEvents carry JSON data, as it is, for the receiver to escape
for wherever it shows it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from promoter import markup
from promoter.notify.events import Notification

SIGNATURE_HEADER = "X-Promoter-Signature-256"
CONTENT_TYPES = {
    "cloudevents": "application/cloudevents+json",
    "slack": "application/json",
    "teams": "application/json",
}


def _title(n: Notification) -> str:
    short = f" {n.dry_sha[:8]}" if n.dry_sha else ""
    pr = f" (PR #{n.pr})" if n.pr is not None else ""
    return f"[{n.strategy}] {n.event} on {n.environment}{short}{pr}"


def cloudevent(n: Notification) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": n.id,
        "source": f"/promoter/strategies/{n.strategy}",
        "type": f"dev.promoter.{n.event}",
        "subject": n.environment,
        "time": n.time.isoformat(),
        "datacontenttype": "application/json",
        "data": n.data(),
    }


def slack(n: Notification) -> dict[str, Any]:
    title, message = markup.slack(_title(n)), markup.slack(n.message)
    links = []
    if n.pr_url and n.pr is not None:
        links.append(f"<{_slack_url(n.pr_url)}|PR #{n.pr}>")
    if n.url:
        links.append(f"<{_slack_url(n.url)}|dashboard>")
    link = (" " + " · ".join(links)) if links else ""
    text = f"*{title}*\n{message}{link}"
    return {
        "text": f"{title}: {message}",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}],
        "unfurl_links": False,
        "unfurl_media": False,
    }


def _slack_url(url: str) -> str:
    """The promoter's own URL inside ``<...|...>``: nothing in it may close the link."""
    return url.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C")


def _plain(text: str, **style: Any) -> dict[str, Any]:
    """A card's text that no Markdown reaches: a RichTextBlock of one TextRun."""
    return {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": text, **style}]}


def teams(n: Notification) -> dict[str, Any]:
    body: list[dict[str, Any]] = [_plain(_title(n), weight="Bolder"), _plain(n.message)]
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    }
    actions = []
    if n.pr_url and n.pr is not None:
        actions.append({"type": "Action.OpenUrl", "title": f"PR #{n.pr}", "url": n.pr_url})
    if n.url:
        actions.append({"type": "Action.OpenUrl", "title": "Dashboard", "url": n.url})
    if actions:
        card["actions"] = actions
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
        ],
    }


RENDERERS = {"cloudevents": cloudevent, "slack": slack, "teams": teams}


def render(fmt: str, n: Notification) -> bytes:
    """The body for a sink of format ``fmt``, as the bytes that are sent and signed."""
    return json.dumps(RENDERERS[fmt](n), separators=(",", ":")).encode()


def sign(key: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of the body, as GitHub signs its webhooks."""
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
