"""The bodies a sink receives (CloudEvents 1.0 structured JSON, Slack, Microsoft Teams)
and their HMAC-SHA256 signature."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from promoter.notify.events import Notification

SIGNATURE_HEADER = "X-Promoter-Signature-256"
CONTENT_TYPES = {
    "cloudevents": "application/cloudevents+json",
    "slack": "application/json",
    "teams": "application/json",
}


def _title(n: Notification) -> str:
    short = f" {n.sha[:8]}" if n.sha else ""
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
    link = f" <{n.url}|dashboard>" if n.url else ""
    text = f"*{_title(n)}*\n{n.message}{link}"
    return {
        "text": f"{_title(n)}: {n.message}",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
    }


def teams(n: Notification) -> dict[str, Any]:
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": _title(n), "weight": "Bolder", "wrap": True},
        {"type": "TextBlock", "text": n.message, "wrap": True},
    ]
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    }
    if n.url:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Dashboard", "url": n.url}]
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
