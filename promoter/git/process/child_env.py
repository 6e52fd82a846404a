"""The environment of the git processes the promoter starts.

Every git command runs with the process environment (or the caller's base), the
variables that keep git from prompting, and the caller's own on top (credentials among
them). It is built for every command and never kept: a change of ``os.environ`` is seen
by the next command, and no credential outlives the command it was given to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from promoter.git.process.credentials import noninteractive_env


def child_env(
    env: Mapping[str, str] | None = None, base_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base_env`` (default: the process environment), the non-interactive variables,
    then ``env``: the environment of a git process, a new dict each time."""
    base = os.environ if base_env is None else base_env
    return {**base, **noninteractive_env(base), **(env or {})}
