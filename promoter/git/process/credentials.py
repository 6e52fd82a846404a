"""Git never asks for credentials and never shows them.

Commands run without a terminal prompt (``noninteractive_env``), and what they print
reaches a message only with URL credentials and every known secret blanked (``redact``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from promoter.redaction import KNOWN

_URL_USERINFO = re.compile(r"(?<=://)[^/\s'\"]+@")


def noninteractive_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables that stop git from ever waiting for a password on a terminal."""
    environ = os.environ if environ is None else environ
    extra = {"GIT_TERMINAL_PROMPT": "0"}
    if "GIT_SSH_COMMAND" not in environ and "GIT_SSH" not in environ:
        extra["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return extra


def strip_credentials(url: str) -> str:
    """``https://user:token@host/x`` -> ``https://host/x``; anything else unchanged."""
    return _URL_USERINFO.sub("", url)


def url_secrets(url: str) -> list[str]:
    """The user-info of ``url`` and its password part, to be kept out of messages."""
    userinfo = urlsplit(url).netloc.rpartition("@")[0] if "://" in url else ""
    return [part for part in (userinfo, userinfo.partition(":")[2]) if part]


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` without URL credentials and without any of ``secrets`` (as ``***``).

    Every secret the process knows is blanked too (``promoter.redaction``). Values shorter
    than six characters (``1``, ``true``) are left alone: they are counters and flags, and
    replacing them would garble the message.
    """
    return KNOWN.scrub(strip_credentials(text), extra=secrets)
