"""The git the promoter runs: found on the ``PATH``, and new enough for what it asks of it.

The promoter computes merges with ``git merge-tree --write-tree`` (git 2.38): the local
SCM's merges and the conflict checks of every SCM's promotions. An older git would fail
at the first merge with its usage text; the daemon says so when it starts instead (Ubuntu
22.04 ships git 2.34, Debian 12 ships 2.39).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading

from promoter.errors import ConfigError

MINIMUM = (2, 38)
"""``merge-tree --write-tree`` and its ``--no-messages``."""
_VERSION = re.compile(r"\bgit version (\d+)\.(\d+)")

_checked: dict[str, str] = {}
"""git executables found new enough, by path: their ``git --version``."""
_lock = threading.Lock()


def parse(text: str) -> tuple[int, int] | None:
    """(major, minor) of what ``git --version`` printed (``git version 2.39.5``, ``... 2.45.1
    (Apple Git-154)``, ``... 2.44.0.windows.1``); None when it says no version."""
    found = _VERSION.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def require_git() -> str:
    """The ``git --version`` of the git on the ``PATH``; ConfigError saying what to install
    when there is none, it does not run, or it is older than ``MINIMUM``. Asked once per
    executable."""
    path = shutil.which("git")
    if path is None:
        raise ConfigError(["git was not found on the PATH: install git 2.38 or newer"])
    with _lock:
        known = _checked.get(path)
        if known is not None:
            return known
        try:
            done = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30, check=False
            )
            said = (done.stdout or done.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError([f"{path} --version did not run: {exc}"]) from exc
        version = parse(said)
        needed = ".".join(map(str, MINIMUM))
        if version is None:
            raise ConfigError(
                [
                    f"{path} --version says no version ({said[:200]!r}):"
                    f" install git {needed} or newer"
                ]
            )
        if version < MINIMUM:
            raise ConfigError(
                [
                    f"{path} is {said}, too old: the promoter needs git {needed} or newer"
                    " (it merges with `git merge-tree --write-tree`)"
                ]
            )
        _checked[path] = said
        return said
