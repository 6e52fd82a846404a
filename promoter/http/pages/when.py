"""Times for people: relative ("5m ago"), with the absolute time on hover."""

from __future__ import annotations

from datetime import datetime
from html import escape

from promoter.http.pages.timeline import duration


def when(at: datetime | str | None, now: datetime) -> str:
    """``<time>`` saying how long ago ``at`` was (or how long until), absolute in its title."""
    if at is None or at == "":
        return ""
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at)
        except ValueError:
            return escape(str(at))
    seconds = (now - at).total_seconds()
    text = f"{duration(seconds)} ago" if seconds >= 0 else f"in {duration(-seconds)}"
    absolute = at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    return f'<time datetime="{escape(at.isoformat())}" title="{escape(absolute)}">{text}</time>'
