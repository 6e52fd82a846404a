"""The health ledger, durable in the repository itself: one JSON note per environment.

Each (strategy, environment) has a note under ``refs/notes/promoter.ledger`` on a
synthetic key object (the blob ``promoter.ledger <strategy> <environment>``), pushed
to the remote, so a promoter with an empty state dir, or a second instance, reads
the same history. Reads come from the mirror's object database (no SCM call).

Writes are batched per repository: pending changes are kept in memory (reads apply
them: read-your-writes) and written as one notes commit and one push per flush. A
durable change (hold, revert, pause, override) flushes at once and returns only when
pushed; healthy records are flushed by a timer, at most once a second, and at
shutdown. A crash loses at most that second of healthy records, which the next
reconcile records again (with a later ``healthySince``: a longer soak, never shorter).
``update_many`` writes changes to several environments (a revert and the holds it
implies) as one notes commit and one push: a crash leaves all of them or none.

In Kubernetes mode with shards, a push runs inside the shard fence (``GitMirror``'s
push guard): a replica that no longer holds the repository's shard pushes nothing, and
the healthy records still pending for it are dropped (the next owner records them).

A note holds the fields that differ from their defaults (an empty one: ``{}``): read
back, the others take their defaults, as they do in a note an older promoter wrote
whole. It is smaller to store, to push and to parse, and the ledger parsed from it
keeps a smaller set of the names given (pydantic's ``model_fields_set``): the parsed
notes are kept for every environment (docs/performance.md, section 3).

A note that cannot be parsed is never read as an empty ledger: reading it raises
``LedgerUnreadable`` (the reader blocks that environment with the reason) and no
write replaces it, so a hold is never lost to a damaged note; a person repairs or
removes the note with git.

Concurrency: a flush writes its notes commit under the mirror's lock, then pushes that
commit without it, so reconciles reading the repository do not wait for the network
round trips; until the push has landed and the local ref shows it, reads apply the
changes in flight as they apply pending ones. A push rejected because the notes ref
moved is retried on top of a fresh fetch, re-applying the changes to what the other
writer stored, so concurrent writers (another flush, another instance) never lose
each other's records. A push that fails otherwise (a remote down, a hook refusing)
undoes its local notes commit and keeps its changes pending, older first, for the
next flush.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from promoter.engine import EnvLedger
from promoter.errors import GitError, NotOwner, PermanentError
from promoter.git import GitMirror, NotesMoved, PushRejected
from promoter.git.caches import remember
from promoter.watchdog import WatchedLock

LEDGER_REF = "refs/notes/promoter.ledger"
NO_REF = "0" * 40
"""As the new value of a ref: delete it."""
ATTEMPTS = 4
PARSED = 1 << 17
"""Ledger notes kept parsed (every environment's, at 10,000 strategies x 4 environments)."""
AT_TIP = PARSED
"""Per repository, the notes read at its ledger's current tip, kept found until the tip
moves (a reconcile reads its environments' and the freezes of every scope many times,
and a pass over the repository's strategies reads every note): a bound below the
notes a repository holds made such a pass read each note again (512 at 200 strategies
x 4 environments a repository: five reads from git a strategy more, about a tenth of a
warm reconcile's time). The values are those of the parsed notes, shared."""

NO_NOTE = EnvLedger()
"""The ledger of a key with no note yet (frozen: one for all of them, kept at the tip
for most freeze scopes of a fleet)."""

log = logging.getLogger("promoter.ledger")

Change = Callable[[EnvLedger], EnvLedger]


class LedgerUnreadable(PermanentError):
    """A ledger note exists but cannot be parsed: fail closed, never overwrite it."""


def blob_sha(data: bytes) -> str:
    """The SHA-1 git names a blob of ``data`` by (a repository in SHA-256 names it
    otherwise: a key that is never met, so the note is parsed as any other)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@functools.lru_cache(maxsize=4096)
def key_object(strategy: str, environment: str) -> tuple[bytes, str]:
    """The synthetic blob a ledger note hangs on, and its SHA-1."""
    data = f"promoter.ledger {strategy} {environment}\n".encode()
    return data, blob_sha(data)


@dataclass
class _Pending:
    mirror: GitMirror
    changes: dict[str, tuple[bytes, list[Change]]] = field(default_factory=dict)
    tip: str | None = None
    """The notes commit being pushed with these changes (in flight only)."""


class GitLedger:
    """Reads and writes ledger notes through a repository's mirror."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}
        self._inflight: dict[str, list[_Pending]] = {}
        """Per repository, the flushes whose push has not landed in the local ref yet."""
        self._guard = WatchedLock("ledger")
        """A leaf (``promoter.git``): taken under a mirror's lock, never around one."""
        self._parsed: dict[str, EnvLedger] = {}
        """Notes already parsed, by their blob's SHA (values are immutable)."""
        self._at_tip: dict[str, tuple[str | None, dict[str, EnvLedger]]] = {}
        """Per repository, its ledger ref's tip and the notes read at that tip, by key
        (used under the mirror's lock)."""
        self._applied: dict[tuple[str, str], tuple[str | None, tuple[Change, ...], EnvLedger]] = {}
        """Per (repository, key): the tip a note was read at, the changes applied to it
        since, and the result (``_apply``)."""

    def read(self, mirror: GitMirror, strategy: str, environment: str) -> EnvLedger:
        return self._read(mirror, key_object(strategy, environment)[1])[2]

    def _read(self, mirror: GitMirror, sha: str) -> tuple[str | None, list[Change], EnvLedger]:
        """The ledger ref's tip, the changes not yet there, and the note on ``sha`` with
        them applied."""
        with mirror.lock:
            local = mirror.branch_sha(LEDGER_REF)
            value = self._stored(mirror, sha, local)
            with self._guard:
                batches = [*self._inflight.get(mirror.name, ()), self._pending.get(mirror.name)]
            changes = [
                change
                for batch in batches
                if batch is not None
                and sha in batch.changes
                # A fetch may already have brought a landed push: not twice.
                and not (batch.tip and local and mirror.is_ancestor(batch.tip, local))
                for change in batch.changes[sha][1]
            ]
        return local, changes, self._apply(mirror.name, sha, local, value, changes)

    def _apply(
        self, repo: str, sha: str, tip: str | None, value: EnvLedger, changes: list[Change]
    ) -> EnvLedger:
        """``value``, the note on ``sha`` at ``tip``, with ``changes`` applied. The same
        object for the same tip and changes, and only the changes made since for more:
        a reconcile reads back what it recorded, and the flush writes it, without copying
        the ledger again each time."""
        if not changes:
            self._applied.pop((repo, sha), None)
            return value
        done = self._applied.get((repo, sha))
        if done is not None and done[0] == tip and done[1] == tuple(changes[: len(done[1])]):
            value, rest = done[2], changes[len(done[1]) :]
        else:
            rest = changes
        for change in rest:
            value = change(value)
        remember(self._applied, (repo, sha), (tip, tuple(changes), value), AT_TIP)
        return value

    def update(
        self,
        mirror: GitMirror,
        strategy: str,
        environment: str,
        change: Change,
        *,
        durable: bool = True,
    ) -> EnvLedger:
        """Apply ``change``; pushed before returning when ``durable``. The new ledger: the
        very one the reads until the flush give back, and the flush writes."""
        data, sha = key_object(strategy, environment)
        with mirror.lock:
            tip, changes, current = self._read(mirror, sha)
            new = change(current)
            if new == current:
                return current
            with self._guard:
                pending = self._pending.setdefault(mirror.name, _Pending(mirror))
                pending.changes.setdefault(sha, (data, []))[1].append(change)
            remember(self._applied, (mirror.name, sha), (tip, (*changes, change), new), AT_TIP)
            if durable:
                self.flush(mirror)
            return new

    def update_many(
        self, mirror: GitMirror, strategy: str, changes: Mapping[str, Change]
    ) -> dict[str, EnvLedger]:
        """Apply one change per environment and push them together, in one notes commit.

        Either every change reaches the remote or none does (the push is one ref update).
        """
        with mirror.lock:
            found = {
                environment: self.update(mirror, strategy, environment, change, durable=False)
                for environment, change in changes.items()
            }
            self.flush(mirror)
        return found

    def flush(self, mirror: GitMirror) -> None:
        """Write and push every pending change of one repository."""
        with self._guard:
            pending = self._pending.pop(mirror.name, None)
            if pending is None or not pending.changes:
                return
            self._inflight.setdefault(mirror.name, []).append(pending)
        try:
            self._write(mirror, pending)
        except BaseException:
            with self._guard:  # keep them for the next flush, older changes first
                self._landed(mirror, pending)
                pending.tip = None
                newer = self._pending.pop(mirror.name, None)
                if newer is not None:
                    for sha, (data, changes) in newer.changes.items():
                        pending.changes.setdefault(sha, (data, []))[1].extend(changes)
                self._pending[mirror.name] = pending
            raise

    def _landed(self, mirror: GitMirror, batch: _Pending) -> None:
        """Under ``_guard``: ``batch`` is no longer in flight."""
        flights = self._inflight.get(mirror.name, [])
        if batch in flights:
            flights.remove(batch)
        if not flights:
            self._inflight.pop(mirror.name, None)

    def flush_all(self) -> None:
        """Flush every repository (the timer and shutdown); failures are kept for later."""
        with self._guard:
            mirrors = [p.mirror for p in self._pending.values()]
        for mirror in mirrors:
            try:
                self.flush(mirror)
            except NotOwner as exc:
                # Another replica works on the repository now and records afresh.
                with self._guard:
                    self._pending.pop(mirror.name, None)
                log.info(
                    "ledger changes dropped", extra={"repository": mirror.name, "error": str(exc)}
                )
            except Exception as exc:
                log.warning(
                    "ledger flush failed", extra={"repository": mirror.name, "error": str(exc)}
                )

    def _stored(self, mirror: GitMirror, sha: str, tip: str | None) -> EnvLedger:
        """Under the mirror's lock: the note on ``sha`` as stored at ``tip``, the tip of
        the ledger ref as the mirror read it."""
        found = self._at_tip.get(mirror.name)
        if found is None or found[0] != tip:
            found = self._at_tip[mirror.name] = (tip, {})
        value = found[1].get(sha)
        if value is None:
            value = remember(found[1], sha, self._parse(mirror, sha), AT_TIP)
        return value

    def _parse(self, mirror: GitMirror, sha: str) -> EnvLedger:
        found = mirror.note_object(LEDGER_REF, sha)
        if found is None or not found[1]:
            return NO_NOTE
        blob, data = found
        parsed = self._parsed.get(blob)
        if parsed is not None:
            return parsed
        try:
            parsed = EnvLedger.model_validate_json(data)
        except ValueError as exc:
            log.error("ledger note unreadable", extra={"key": sha, "ref": LEDGER_REF})
            raise LedgerUnreadable(
                f"the ledger note {sha[:12]} under {LEDGER_REF} cannot be parsed; it is kept"
                " as it is: repair or remove it with git notes"
            ) from exc
        return remember(self._parsed, blob, parsed, PARSED)

    def _write(self, mirror: GitMirror, pending: _Pending) -> None:
        for _ in range(ATTEMPTS):
            with mirror.lock:
                before = mirror.refs().get(LEDGER_REF)
                notes: dict[str, str] = {}
                for sha, (_, changes) in pending.changes.items():
                    value = self._stored(mirror, sha, before)
                    value = self._apply(mirror.name, sha, before, value, changes)
                    notes[sha] = text = value.model_dump_json(exclude_defaults=True)
                    # Read back at the new tip, the note is this value: not parsed again.
                    remember(self._parsed, blob_sha(text.encode()), value, PARSED)
                blobs = [data for data, _ in pending.changes.values()]
                try:
                    tip = mirror.write_notes(
                        LEDGER_REF, notes, message="promoter ledger", blobs=blobs
                    )
                except NotesMoved:  # read again at the tip another writer made
                    log.info("ledger moved, retrying", extra={"repository": mirror.name})
                    continue
                pending.tip = tip
            try:
                mirror.push_commit(LEDGER_REF, tip, lease=before)
            except PushRejected:
                log.info("ledger moved, retrying", extra={"repository": mirror.name})
                with mirror.lock:
                    mirror.fetch()
                continue
            except BaseException:
                # Not pushed: undo the local commit (unless a writer built on it), so that
                # reads and the next flush apply the changes, kept pending, only once.
                with mirror.lock:
                    mirror.set_ref(LEDGER_REF, before or NO_REF, expected=tip)
                raise
            with mirror.lock:
                mirror.keep_pushed(LEDGER_REF, tip, before=before)
                with self._guard:
                    self._landed(mirror, pending)
            return
        raise GitError(f"the ledger of {mirror.name} kept moving; try again")
