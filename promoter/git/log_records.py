"""Records of ``git log``: the formats the mirror asks for and their parsers.

Fields are split by the unit separator (``%x1f``) and records by the record separator
(``%x1e``), which no commit message or name contains.
"""

from __future__ import annotations

from datetime import datetime

from promoter.models import Author, DryCommit

LOG_FORMAT = "%H%x1f%s%x1f%an%x1f%aI%x1f%b%x1e"
"""``git log`` records: SHA, subject, author, date, body (unit and record separators)."""


def parse_log(out: str) -> list[DryCommit]:
    """The commits of a ``git log --format=LOG_FORMAT``, newest first."""
    commits = []
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 5:
            sha, subject, author, date, body = fields
            when = datetime.fromisoformat(date) if date else None
            commits.append(
                DryCommit(sha=sha, subject=subject, author=author, date=when, body=body.strip())
            )
    return commits


AUTHORS_FORMAT = "%an%x1f%ae%x1f%(trailers:key=Co-authored-by,valueonly,separator=%x1f)%x1e"
"""``git log`` records: author name, e-mail, then each ``Co-authored-by`` as ``Name <mail>``."""
MAX_AUTHORS_LOG = 1000
"""Commits whose authors ``authors`` reads at most; beyond, it refuses (the caller waits)."""


def parse_authors(out: str) -> tuple[Author, ...]:
    """The distinct people of a ``git log --format=AUTHORS_FORMAT``, in order of appearance."""
    found: dict[Author, None] = {}
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) < 2 or not (fields[0] or fields[1]):
            continue
        found[Author(name=fields[0], email=fields[1])] = None
        for trailer in fields[2:]:
            name, _, rest = trailer.strip().partition("<")
            if name.strip() or rest:
                found[Author(name=name.strip(), email=rest.rstrip(">").strip())] = None
    return tuple(found)
