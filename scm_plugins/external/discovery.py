"""Finding plugin executables: ``promoter-scm-<name>`` in the given directories, then on PATH,
then beside the running interpreter's scripts (where ``pip`` installed the promoter itself,
so that ``.venv/bin/promoter`` finds a plugin installed with it without an activated venv).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from promoter.config import ExternalPlugin
from promoter.errors import ConfigError

PREFIX = "promoter-scm-"


@dataclass(frozen=True)
class Found:
    """One plugin executable found on disk."""

    name: str
    path: Path


def beside_interpreter() -> list[str]:
    """The directories of the running interpreter's console scripts."""
    found = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    return [d for d in found if d]


def _search_path(directories: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    dirs = [str(Path(d).expanduser()) for d in directories]
    dirs += [d for d in environ.get("PATH", "").split(os.pathsep) if d]
    dirs += beside_interpreter()
    return list(dict.fromkeys(dirs))


def find(name: str, *, directories: Iterable[str] = (), environ: Mapping[str, str]) -> Path:
    """The executable of plugin ``name``; ConfigError saying where it looked when missing."""
    dirs = _search_path(directories, environ)
    found = shutil.which(PREFIX + name, path=os.pathsep.join(dirs))
    if found is None:
        raise ConfigError(
            [f"no SCM plugin executable {PREFIX}{name} in {', '.join(dirs) or 'an empty PATH'}"]
        )
    return Path(found)


def discover(*, directories: Iterable[str] = (), environ: Mapping[str, str]) -> list[Found]:
    """Every ``promoter-scm-*`` executable, the first of each name in search order."""
    seen: dict[str, Found] = {}
    for directory in _search_path(directories, environ):
        try:
            entries = sorted(Path(directory).iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.name.removeprefix(PREFIX)
            if (
                entry.name.startswith(PREFIX)
                and name
                and name not in seen
                and entry.is_file()
                and os.access(entry, os.X_OK)
            ):
                seen[name] = Found(name, entry)
    return sorted(seen.values(), key=lambda f: f.name)


def command_line(plugin: ExternalPlugin, *, environ: Mapping[str, str]) -> list[str]:
    """The argv that starts the plugin: ``command`` as given, or the executable found by name."""
    argv = plugin.argv()
    if argv is not None:
        return argv
    assert plugin.name is not None
    directories = [plugin.directory] if plugin.directory else []
    return [str(find(plugin.name, directories=directories, environ=environ)), *plugin.args]
