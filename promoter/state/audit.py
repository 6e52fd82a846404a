"""The audit: who asked for which write, when, from where, and what came of it.

Every write the API is asked for becomes an ``AuditEntry``. ``AuditTrail.record``
appends it to a journal on disk (``<stateDir>/audit/journal.jsonl``, fsync'd) before
the answer is sent, so no entry of a write that happened is lost to a crash; entries
naming a repository are then pushed to that repository's audit notes
(``promoter.state.audit_notes``) in batches, like the ledger's healthy records (a
timer, at most once a second, and at shutdown). A write is journaled as ``started``
before it runs: one a crash cut short is recorded ``interrupted`` at the next start.

Each client leaves a bounded number of entries a day (``promoter.state.audit_quota``):
``record`` says whether it kept one. Refusals a repository's notes do not keep (past
their bound a day) are forgotten by the journal too, once the push says so: what the
audit lists is what the notes kept.

Entries naming no repository (a refresh of everything, an unknown strategy) stay in the
journal only, the newest ``KEEP_UNSCOPED`` of them. So do, in Kubernetes mode with
shards, entries about a repository whose shard another replica holds (``owns``): a
refresh of another replica's strategy is audited where it was asked for, and only the
holder may push the repository's notes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from promoter.git import GitMirror
from promoter.metrics import AUDIT_DROPPED_TOTAL
from promoter.state import audit_notes
from promoter.state.audit_entry import AuditEntry, AuditPage, AuditQuery, cursor
from promoter.state.audit_quota import AuditQuota
from promoter.watchdog import WatchedLock

log = logging.getLogger("promoter.audit")

KEEP_UNSCOPED = 1000
COMPACT_AFTER = 1 << 20
"""Bytes of journal past which it is rewritten without what the notes hold."""
LOOK_BACK = timedelta(days=30)
"""How far back a query reads when it gives no ``since``."""


class AuditTrail:
    """The journal plus the repositories' audit notes; ``mirror_of`` names a repository's
    mirror (None for a repository the configuration does not have)."""

    def __init__(
        self,
        directory: Path,
        *,
        mirror_of: Callable[[str], GitMirror | None],
        owns: Callable[[str], bool] = lambda repository: True,
        quota: AuditQuota | None = None,
    ) -> None:
        self.directory = directory
        self.path = directory / "journal.jsonl"
        self.mirror_of = mirror_of
        self.owns = owns
        self.quota = quota if quota is not None else AuditQuota()
        self._lock = WatchedLock("audit journal")
        """Never held while a mirror is used (``promoter.git``)."""
        self._pending: dict[str, list[AuditEntry]] = {}
        self._pushed: set[str] = set()
        self._journal: dict[str, AuditEntry] = {}
        self._pushed_to: set[str] = set()
        """Repositories this process pushed to last time, whose notes it may trust."""
        self._told: dict[str, date] = {}
        """The day each repository's refusals not kept were last logged."""
        self._recover()

    # --- writing -------------------------------------------------------------------------

    def record(self, entry: AuditEntry) -> bool:
        """Journal ``entry`` (on disk when this returns) and queue it for its repository;
        False, and nothing kept, when it is the first of its id past its client's bound."""
        with self._lock:
            if entry.id not in self._journal and not self.quota.admit(entry):
                return False
            self._append({"entry": entry.model_dump(mode="json")})
            self._journal[entry.id] = entry
            if entry.outcome != "started" and entry.repository:
                self._pending.setdefault(entry.repository, []).append(entry)
        return True

    def flush_all(self) -> None:
        """Push every repository's pending entries; a failure keeps them for the next try."""
        with self._lock:
            batches, self._pending = self._pending, {}
        for repository, entries in batches.items():
            if not self.owns(repository):
                continue  # another replica holds it: kept in the journal only
            mirror = self.mirror_of(repository)
            try:
                dropped: set[str] = set()
                if mirror is not None:
                    fetch = repository not in self._pushed_to
                    dropped = audit_notes.append(mirror, entries, fetch=fetch)
                    self._pushed_to.add(repository)
            except Exception as exc:
                self._pushed_to.discard(repository)
                log.warning(
                    "audit push failed", extra={"repository": repository, "error": str(exc)}
                )
                with self._lock:
                    self._pending[repository] = entries + self._pending.get(repository, [])
                continue
            with self._lock:
                ids = [e.id for e in entries]
                self._append({"pushed": ids, "dropped": sorted(dropped)})
                self._pushed.update(ids)
                self._forget(dropped)
            if dropped:
                AUDIT_DROPPED_TOTAL.labels("refused", "notes").inc(len(dropped))
                today = datetime.now(UTC).date()
                if self._told.get(repository) != today:  # once a repository and day
                    self._told[repository] = today
                    log.warning(
                        "audit refusals not kept",
                        extra={"repository": repository, "count": len(dropped)},
                    )
        self._compact()

    def _forget(self, ids: set[str]) -> None:
        """Drop entries the notes did not keep from the journal's memory (under ``_lock``)."""
        for dropped in ids:
            self._journal.pop(dropped, None)

    def _append(self, record: dict[str, object]) -> None:
        """One journal line, fsync'd (under ``_lock``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def _recover(self) -> None:
        """Read the journal back: entries not pushed yet are pending again, and a write a
        crash cut short (``started``, nothing after) is recorded ``interrupted``."""
        for line in _lines(self.path):
            pushed = line.get("pushed")
            if isinstance(pushed, list):
                self._pushed.update(str(i) for i in pushed)
                dropped = line.get("dropped")
                self._forget({str(i) for i in dropped} if isinstance(dropped, list) else set())
            elif "entry" in line:
                try:
                    entry = AuditEntry.model_validate(line["entry"])
                except ValueError:
                    log.error("audit journal line unreadable", extra={"path": str(self.path)})
                    continue
                self._journal[entry.id] = entry
        for entry in list(self._journal.values()):
            if entry.outcome == "started":
                self.record(entry.model_copy(update={"outcome": "interrupted"}))
            elif entry.repository and entry.id not in self._pushed:
                self._pending.setdefault(entry.repository, []).append(entry)

    def _compact(self) -> None:
        """Rewrite a long journal with only what the notes do not hold yet."""
        with self._lock:
            if not self.path.exists() or self.path.stat().st_size < COMPACT_AFTER:
                return
            kept = [e for e in self._journal.values() if e.id not in self._pushed]
            scoped = [e for e in kept if e.repository and self.owns(e.repository)]
            ours = {e.id for e in scoped}
            unscoped = [e for e in kept if e.id not in ours][-KEEP_UNSCOPED:]
            self._journal = {e.id: e for e in sorted([*scoped, *unscoped], key=cursor)}
            self._pushed = set()
            temporary = self.path.with_suffix(".tmp")
            with temporary.open("w", encoding="utf-8") as out:
                for e in self._journal.values():
                    out.write(json.dumps({"entry": e.model_dump(mode="json")}) + "\n")
                out.flush()
                os.fsync(out.fileno())
            temporary.replace(self.path)

    # --- reading -------------------------------------------------------------------------

    def entries(self, query: AuditQuery, repositories: Iterable[str]) -> AuditPage:
        """A page of entries of ``repositories`` and of the journal matching ``query``."""
        until = query.until or datetime.now(UTC)
        since = query.since or until - LOOK_BACK
        found: dict[str, AuditEntry] = {}
        for repository in sorted(set(repositories)):
            mirror = self.mirror_of(repository)
            if mirror is not None:
                for entry in audit_notes.read(mirror, since=since, until=until):
                    found[entry.id] = entry
        with self._lock:
            found.update(self._journal)  # the newest word on each entry, pushed or not
        bounded = query.model_copy(update={"since": since, "until": until})
        matching = sorted(
            (e for e in found.values() if bounded.matches(e)), key=cursor, reverse=True
        )
        page = matching[: query.limit]
        more = len(matching) > query.limit
        return AuditPage(entries=page, next=cursor(page[-1]) if more and page else None)


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    found = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(text)
        except ValueError:
            continue  # a line a crash cut short
        if isinstance(value, dict):
            found.append(value)
    return found
