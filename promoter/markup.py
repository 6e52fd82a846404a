"""Text quoted into someone else's markup, escaped for it: Slack's mrkdwn, Markdown (PR
comments and bodies, GitHub check runs), HTML.

What the promoter quotes (a commit subject, a hold reason, a person's name) is plain
text: once escaped it shows as written and can neither link, ping nor format. The only
links a message carries are the URLs the promoter builds itself, added by the caller.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~=\"'&:;,/?%$^])")
_MENTION = re.compile(r"@(?=\w)")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")


def slack(text: str) -> str:
    """For Slack's mrkdwn: ``&``, ``<`` and ``>`` as entities, as Slack asks, so that
    ``<!channel>`` or ``<https://x|text>`` in the text is shown, never acted on."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown(text: str) -> str:
    """For Markdown on one line: every ASCII punctuation CommonMark could read as markup
    backslash-escaped, line breaks as spaces, and ``@name`` broken by a zero-width space
    so that it mentions nobody."""
    one_line = _LINE_BREAKS.sub(" ", text)
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line)
    return _MENTION.sub("@\u200b", escaped)


def html_text(text: str) -> str:
    """For HTML, in text or in a quoted attribute."""
    return html.escape(text, quote=True)
