"""The environment git runs in: an identity to commit with, no prompts, no credentials shown.

A fresh machine (a container, a CI runner) has no git identity, so every command that
creates a commit gets ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` from here unless the
environment or the repository's configuration already names someone. Commands never
prompt, and their failures become ``GitError`` messages without credentials.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from promoter.redaction import KNOWN

FALLBACK_NAME = "promoter"
FALLBACK_EMAIL = "promoter@localhost"

_ROLES = ("AUTHOR", "COMMITTER")
_URL_USERINFO = re.compile(r"(?<=://)[^/\s'\"]+@")


def _configured(key: str, git_dir: Path | None, environ: Mapping[str, str]) -> bool:
    """Whether git's configuration (global, system, repository) sets ``key``."""
    from promoter.git.runner import run_git

    args = ["--git-dir", str(git_dir)] if git_dir is not None else []
    status, out, _ = run_git([*args, "config", "--get", key], base_env=environ, ok=(0, 1, 128))
    return status == 0 and bool(out.strip())


def identity_env(
    *, git_dir: Path | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` variables to add so that git can commit.

    A variable is added (as "promoter <promoter@localhost>") only when neither
    ``environ`` (default: ``os.environ``) sets it nor git's configuration sets the
    matching ``user.name`` / ``user.email``.
    """
    environ = os.environ if environ is None else environ
    needed = {
        field: [
            f"GIT_{role}_{field.upper()}"
            for role in _ROLES
            if f"GIT_{role}_{field.upper()}" not in environ
        ]
        for field in ("name", "email")
    }
    fallback = {"name": FALLBACK_NAME, "email": FALLBACK_EMAIL}
    extra: dict[str, str] = {}
    for field, variables in needed.items():
        if variables and not _configured(f"user.{field}", git_dir, environ):
            extra.update(dict.fromkeys(variables, fallback[field]))
    return extra


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
