"""Text quoted into someone else's markup, escaped for it: Slack's mrkdwn and Markdown (PR
comments and bodies, GitHub check runs). The pages the daemon serves escape for HTML
themselves (``html.escape``).

What the promoter quotes (a commit subject, a hold reason, a person's name) is plain
text: once escaped it shows as written and can neither link, ping nor format. The only
links a message carries are the URLs the promoter builds itself, added by the caller.
"""

from __future__ import annotations

import re

_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~=\"'&:;,/?%$^])")
_MENTION = re.compile(r"@(?=\w)")
_WWW = re.compile(r"(?i)\b(www)(?=\\?\.)")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")


def slack(text: str) -> str:
    """For Slack's mrkdwn: ``&``, ``<`` and ``>`` as entities, as Slack asks, so that
    ``<!channel>`` or ``<https://x|text>`` in the text is shown, never acted on."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown(text: str) -> str:
    """For Markdown on one line: every ASCII punctuation CommonMark could read as markup
    backslash-escaped (so ``https://`` is no autolink either), line breaks as spaces, and
    a zero-width space after ``@`` and ``www`` so that GitHub's and GitLab's extensions
    find no mention and no ``www.`` link in it."""
    one_line = _LINE_BREAKS.sub(" ", text)
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line)
    return _WWW.sub("\\1\u200b", _MENTION.sub("@\u200b", escaped))
