"""The files that change between two commits of a mirror (``git diff --name-status``)."""

from __future__ import annotations

import re

from promoter.git.bare import BareRepository

SHA = re.compile(r"^[0-9a-f]{7,64}$")
MAX_FILES = 200


def changed_files(
    mirror: BareRepository, older: str, newer: str, *, limit: int = MAX_FILES
) -> list[tuple[str, str]]:
    """``(status, path)`` of each file that differs from ``older`` to ``newer`` (``A``dded,
    ``M``odified, ``D``eleted, ``R``enamed: ``old -> new``), at most ``limit`` (and one
    more, so a caller can tell there are more)."""
    if not (SHA.match(older) and SHA.match(newer)):
        raise ValueError("two commit SHAs")
    args = ["diff", "--name-status", "-z", "-M", "--no-ext-diff", older, newer, "--"]
    _, out, _ = mirror._run(args)
    fields = out.split("\0")
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(fields) - 1 and len(found) <= limit:
        status = fields[i]
        if status.startswith(("R", "C")):
            found.append((status[0], f"{fields[i + 1]} -> {fields[i + 2]}"))
            i += 3
        else:
            found.append((status[:1], fields[i + 1]))
            i += 2
    return found
