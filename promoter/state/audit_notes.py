"""The audit in git: one JSON note per repository and day under ``refs/notes/promoter.audit``.

Each day's note hangs on a synthetic key object (the blob ``promoter.audit YYYY-MM-DD``)
and lists that day's entries oldest first; it is pushed to the remote, so every replica
and every later instance reads the same audit. A ref of its own, apart from the ledger's:
an audit entry never moves what tells a settled strategy from one to read again.

Entries are appended (an entry already there, by id, is not written twice); a push
refused because another writer moved the ref is retried on a fresh fetch, on top of what
that writer stored. Refusals past ``MAX_REFUSED`` a day are counted, not kept, so a
flood of refused requests cannot grow the repository without bound (``append`` says which
it did not keep); every allowed, failed or interrupted write is kept. A note that cannot
be parsed is never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from promoter.errors import GitError, PermanentError
from promoter.git import GitMirror, NotesMoved, PushRejected
from promoter.state.audit_entry import AuditEntry

AUDIT_REF = "refs/notes/promoter.audit"
ATTEMPTS = 4
MAX_REFUSED = 1000
"""Refused requests kept per repository and day; more are only counted."""

log = logging.getLogger("promoter.audit")


class AuditNoteUnreadable(PermanentError):
    """A day's audit note exists but cannot be parsed: it is kept as it is."""


def key_object(day: date) -> tuple[bytes, str]:
    """The synthetic blob a day's note hangs on, and its SHA-1."""
    data = f"promoter.audit {day.isoformat()}\n".encode()
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    return data, sha


def _day(entry: AuditEntry) -> date:
    return entry.at.astimezone(UTC).date()


def _parse(text: str | None, day: date) -> dict[str, Any]:
    if not text:
        return {"day": day.isoformat(), "entries": [], "refusedNotKept": 0}
    try:
        value = json.loads(text)
        if not isinstance(value, dict) or not isinstance(value.get("entries"), list):
            raise ValueError("not an audit note")
    except ValueError as exc:
        raise AuditNoteUnreadable(
            f"the audit note of {day} under {AUDIT_REF} cannot be parsed; it is kept as it is"
        ) from exc
    return value


def _merged(
    note: dict[str, Any], entries: list[AuditEntry], dropped: set[str]
) -> dict[str, Any] | None:
    """``note`` with ``entries`` appended, or None when it holds them all already; the
    ids of the refusals past the day's bound go into ``dropped``."""
    known = {e.get("id") for e in note["entries"] if isinstance(e, dict)}
    refused = sum(
        1 for e in note["entries"] if isinstance(e, dict) and e.get("outcome") == "refused"
    )
    added, not_kept = [], int(note.get("refusedNotKept") or 0)
    for entry in entries:
        if entry.id in known:
            continue
        known.add(entry.id)
        if entry.outcome == "refused":
            if refused >= MAX_REFUSED:
                not_kept += 1
                dropped.add(entry.id)
                continue
            refused += 1
        added.append(entry.model_dump(mode="json"))
    if not added and not_kept == int(note.get("refusedNotKept") or 0):
        return None
    return {**note, "entries": [*note["entries"], *added], "refusedNotKept": not_kept}


def append(mirror: GitMirror, entries: list[AuditEntry], *, fetch: bool = False) -> set[str]:
    """Add ``entries`` to their days' notes and push them, as one notes commit; the ids
    of the refusals not kept (past ``MAX_REFUSED`` that day).

    ``fetch`` first when the mirror's notes may hold a commit that was written and never
    pushed (a push that failed, a process that died before it): entries already there,
    by id, are not written again, so they must be compared with what the remote has."""
    days: dict[date, list[AuditEntry]] = {}
    for entry in entries:
        days.setdefault(_day(entry), []).append(entry)
    if fetch:
        with mirror.lock:
            mirror.fetch()
    for _ in range(ATTEMPTS):
        with mirror.lock:
            before = mirror.refs().get(AUDIT_REF)
            notes: dict[str, str] = {}
            blobs: list[bytes] = []
            dropped: set[str] = set()
            for day, group in sorted(days.items()):
                data, sha = key_object(day)
                merged = _merged(_parse(mirror.read_note(AUDIT_REF, sha), day), group, dropped)
                if merged is not None:
                    notes[sha] = json.dumps(merged, indent=None, separators=(",", ":")) + "\n"
                    blobs.append(data)
            if not notes:
                return dropped
            try:
                tip = mirror.write_notes(AUDIT_REF, notes, message="promoter audit", blobs=blobs)
            except NotesMoved:  # read again at the tip another writer made
                log.info("audit moved, retrying", extra={"repository": mirror.name})
                continue
        try:
            mirror.push_commit(AUDIT_REF, tip, lease=before)
        except PushRejected:
            log.info("audit moved, retrying", extra={"repository": mirror.name})
            with mirror.lock:
                mirror.fetch()
            continue
        with mirror.lock:
            mirror.keep_pushed(AUDIT_REF, tip, before=before)
        return dropped
    raise GitError(f"the audit of {mirror.name} kept moving; try again")


def read(mirror: GitMirror, *, since: datetime, until: datetime) -> Iterator[AuditEntry]:
    """The entries of the days from ``since`` to ``until`` (unreadable notes are skipped,
    with an error logged)."""
    day, last = since.astimezone(UTC).date(), until.astimezone(UTC).date()
    while day <= last:
        _, sha = key_object(day)
        try:
            note = _parse(mirror.read_note(AUDIT_REF, sha), day)
        except AuditNoteUnreadable as exc:
            log.error("audit note unreadable", extra={"repository": mirror.name, "error": str(exc)})
            note = {"entries": []}
        for raw in _valid(note["entries"]):
            try:
                yield AuditEntry.model_validate(raw)
            except ValueError:
                continue
        day += timedelta(days=1)


def _valid(items: Iterable[object]) -> Iterator[dict[str, Any]]:
    for item in items:
        if isinstance(item, dict):
            yield item
