"""The identity git commits with where the machine has none.

A fresh machine (a container, a CI runner) has no git identity, so every command that
creates a commit gets ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` from here unless the
environment or the repository's configuration already names someone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from promoter.git.process.runner import run_git

FALLBACK_NAME = "promoter"
FALLBACK_EMAIL = "promoter@localhost"

_ROLES = ("AUTHOR", "COMMITTER")


def _configured(key: str, git_dir: Path | None, environ: Mapping[str, str]) -> bool:
    """Whether git's configuration (global, system, repository) sets ``key``."""
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
