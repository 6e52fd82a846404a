"""Records of ``git log``: the formats the mirror asks for and their parsers.

Fields are split by the unit separator (``%x1f``) and records by the record separator
(``%x1e``), which no commit message or name contains.
"""

from __future__ import annotations

import re
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


AUTHORS_FORMAT = "%an%x1f%ae%x1f%B%x1e"
"""``git log`` records: author name, e-mail, then the whole raw message (its co-authors are
read from it by ``co_authors``, not by git's trailer parser: see there)."""
MAX_AUTHORS_LOG = 1000
"""Commits whose authors ``authors`` reads at most; beyond, it refuses (the caller waits)."""

_CO_AUTHOR = re.compile(
    r"^[ \t]*co-authored-by[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE
)


def co_authors(message: str) -> tuple[Author, ...]:
    """Every person a ``Co-authored-by:`` line of ``message`` names, in order.

    Read as the SCMs show co-authors and leaning to exclusion (a co-author's approval does
    not count): any such line anywhere in the message, in any case, with or without a
    blank line before it. Git's own trailer parser reads only the message's last
    paragraph, and only when it is all trailers, so a co-author typed right under the body
    would be missed, and their approval counted.
    """
    found: dict[Author, None] = {}
    for value in _CO_AUTHOR.findall(message):
        name, _, rest = value.partition("<")
        if name.strip() or rest:
            found[Author(name=name.strip(), email=rest.partition(">")[0].strip())] = None
    return tuple(found)


def parse_authors(out: str) -> tuple[Author, ...]:
    """The distinct people of a ``git log --format=AUTHORS_FORMAT``, in order of appearance."""
    found: dict[Author, None] = {}
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) < 2 or not (fields[0] or fields[1]):
            continue
        found[Author(name=fields[0], email=fields[1])] = None
        for author in co_authors("\x1f".join(fields[2:])):
            found[author] = None
    return tuple(found)
