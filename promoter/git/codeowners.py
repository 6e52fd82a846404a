"""The code owners of a change: the CODEOWNERS file of a branch, matched against the paths
that differ between two commits.

GitHub's rules: the last matching line wins; ``*`` matches within one path segment, ``**``
across them, a leading ``/`` anchors to the root, a pattern without a slash matches a name
at any depth, a trailing ``/`` a directory's contents. GitLab's ``[Section]`` headers each
hold rules of their own: the last match of every section counts. Owners are ``@user`` or
``@org/team`` (``@group/subgroup`` on GitLab); e-mail owners are left out.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from promoter.git.process.runner import run_git

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
MAX_PATHS = 2000


@cache
def _pattern(text: str) -> re.Pattern[str]:
    anchored = text.startswith("/") or "/" in text.rstrip("/")
    body = text.strip("/")
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(body[i])
            i += 1
    prefix = "^" if anchored else "^(?:.*/)?"
    return re.compile(prefix + out + "(?:/.*)?$")


def parse(text: str) -> list[list[tuple[str, tuple[str, ...]]]]:
    """The rules of a CODEOWNERS file, per section (one section for GitHub's)."""
    sections: list[list[tuple[str, tuple[str, ...]]]] = [[]]
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if re.match(r"^\^?\[[^\]]+\]", line):
            sections.append([])
            continue
        pattern, *owners = line.split()
        sections[-1].append((pattern, tuple(o for o in owners if o.startswith("@"))))
    return sections


def owners(text: str, paths: list[str]) -> tuple[str, ...]:
    """The owners (``@`` dropped) of ``paths`` under the rules of ``text``, in file order."""
    found: dict[str, None] = {}
    for rules in parse(text):
        for path in paths:
            match = None
            for pattern, names in rules:
                if _pattern(pattern).match(path):
                    match = names
            for name in match or ():
                found.setdefault(name.lstrip("@"), None)
    return tuple(found)


def change_owners(git_dir: Path, branch_sha: str, since: str, until: str) -> tuple[str, ...]:
    """The owners, by the CODEOWNERS of ``branch_sha``, of what differs from ``since`` to
    ``until`` (hydrated commits); none without a CODEOWNERS file."""
    for location in LOCATIONS:
        status, text, _ = run_git(
            ["cat-file", "blob", f"{branch_sha}:{location}"], cwd=git_dir, ok=(0, 128)
        )
        if status == 0:
            break
    else:
        return ()
    diff = run_git(["diff", "--name-only", "--no-renames", since, until], cwd=git_dir)[1]
    return owners(text, diff.splitlines()[:MAX_PATHS])
