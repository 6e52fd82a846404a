"""The environment git runs in, and the one way the promoter runs a git command.

A fresh machine (a container, a CI runner) has no git identity, so every command that
creates a commit gets ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` from here unless the
environment or the repository's configuration already names someone. Commands never
prompt, and their failures become ``GitError`` messages without credentials.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Container, Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from git import Git
from git.exc import GitCommandError

from promoter.errors import GitError

FALLBACK_NAME = "promoter"
FALLBACK_EMAIL = "promoter@localhost"

_ROLES = ("AUTHOR", "COMMITTER")
_URL_USERINFO = re.compile(r"(?<=://)[^/\s'\"]+@")
_MIN_SECRET_LEN = 6


def _configured(key: str, git_dir: Path | None, environ: Mapping[str, str]) -> bool:
    """Whether git's configuration (global, system, repository) sets ``key``."""
    args = ["git"]
    if git_dir is not None:
        args += ["--git-dir", str(git_dir)]
    result = subprocess.run(
        [*args, "config", "--get", key],
        capture_output=True,
        env=dict(environ),
        check=False,
    )
    return result.returncode == 0 and bool(result.stdout.strip())


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

    Values shorter than six characters (``1``, ``true``) are left alone: they are
    counters and flags, and replacing them would garble the message.
    """
    text = strip_credentials(text)
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET_LEN}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def git_error(
    args: Sequence[str], status: int, stderr: str, secrets: Iterable[str], what: str = ""
) -> GitError:
    """A ``GitError`` for a failed ``git args``, caused by an equally clean ``GitCommandError``.

    GitPython's own exception is never kept: its command line and stderr may hold secrets.
    """
    secrets = list(secrets)
    clean = redact(stderr.strip(), secrets)
    where = f" {what}" if what else ""
    error = GitError(f"git {args[0]}{where} failed (exit {status}): {clean or 'no message'}")
    error.__cause__ = GitCommandError(["git", *(redact(a, secrets) for a in args)], status, clean)
    return error


def run_git(
    git: Git,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    ok: Container[int] = (0,),
    timeout: float | None = None,
    secrets: Iterable[str] = (),
    what: str = "",
) -> tuple[int, str, str]:
    """Run ``git args`` without prompts: ``(status, stdout, stderr)``.

    ``env`` is added to the process environment. A status not in ``ok`` raises
    ``git_error``, with the values of ``env`` and ``secrets`` redacted.
    """
    full_env = {**noninteractive_env(), **(env or {})}
    with tempfile.TemporaryFile() as fh:
        if stdin is not None:
            fh.write(stdin)
            fh.seek(0)
        status, out, err = git.execute(
            ["git", *args],
            istream=fh if stdin is not None else None,
            env=full_env,
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=timeout,
        )
    if status in ok:
        return status, out, err
    raise git_error(args, status, err, [*secrets, *(env or {}).values()], what)
