"""The environment of the git processes the promoter starts, its base built once.

Every git command runs with the process environment (or the caller's base), the
variables that keep git from prompting, and the caller's own on top. Building the base
anew cost about 33 µs of the daemon's CPU for every git process (a copy of
``os.environ`` decodes each variable), a tenth of what starting the process costs it.
The base with the non-interactive variables is kept per base, and every entry is
dropped when the process environment changes: the daemon watches ``os.environ``'s
writes (``promoter.tuning.environment_version``, set as it starts). Without that watch
(a command of the CLI), or while a change is under way, the base is built for every
command. The caller's own variables (credentials among them) are laid on a copy for each
command and never kept.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from promoter import tuning
from promoter.git.credentials import noninteractive_env

MAX_ENTRIES = 64
"""Distinct bases kept (the process environment, the local SCM's); past that the oldest go."""

_Key = tuple[tuple[str, str], ...] | None

_lock = threading.Lock()
_built: dict[_Key, dict[str, str]] = {}
_built_at: int | None = None
"""The version of the process environment the entries were built from."""


def child_env(
    env: Mapping[str, str] | None = None, base_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base_env`` (default: the process environment), the non-interactive variables,
    then ``env``: the environment of a git process. Without ``env`` the same object is
    returned for the same base until the process environment changes: callers must not
    modify it."""
    base = _base(base_env)
    return {**base, **env} if env else base


def _base(base_env: Mapping[str, str] | None) -> dict[str, str]:
    global _built_at
    version = tuning.environment_version()
    if version is None:  # no way to tell a change: build every time
        return _merge(base_env)
    key: _Key = None if base_env is None else tuple(base_env.items())
    with _lock:
        if _built_at != version:
            _built.clear()
            _built_at = version
        found = _built.get(key)
        if found is None:
            if len(_built) >= MAX_ENTRIES:
                del _built[next(iter(_built))]
            found = _built[key] = _merge(base_env)
        return found


def _merge(base_env: Mapping[str, str] | None) -> dict[str, str]:
    return {**(os.environ if base_env is None else base_env), **noninteractive_env()}
