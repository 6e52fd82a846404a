"""The health ledger, durable in the repository itself: one JSON note per environment.

Each (strategy, environment) has a note under ``refs/notes/promoter.ledger`` on a
synthetic key object (the blob ``promoter.ledger <strategy> <environment>``), and
the notes ref is pushed to the remote after every change, with a lease, so a
promoter with an empty state dir, or a second instance, reads the same history.
Reads come from the mirror's object database (no process, no SCM call).

Concurrency: updates hold the mirror's lock; a push rejected because the notes
ref moved is retried on top of a fresh fetch, so concurrent writers never lose
each other's records.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from promoter.engine.ledger_state import EnvLedger
from promoter.errors import GitError
from promoter.git import GitMirror, PushRejected

LEDGER_REF = "refs/notes/promoter.ledger"
ATTEMPTS = 4

log = logging.getLogger("promoter.ledger")


def key_object(strategy: str, environment: str) -> tuple[bytes, str]:
    """The synthetic blob a ledger note hangs on, and its SHA-1."""
    data = f"promoter.ledger {strategy} {environment}\n".encode()
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    return data, sha


class GitLedger:
    """Reads and writes ledger notes through a repository's mirror."""

    def read(self, mirror: GitMirror, strategy: str, environment: str) -> EnvLedger:
        _, sha = key_object(strategy, environment)
        text = mirror.read_note(LEDGER_REF, sha)
        if not text:
            return EnvLedger()
        try:
            return EnvLedger.model_validate_json(text)
        except ValueError:
            log.error(
                "ledger note unreadable, starting afresh",
                extra={"strategy": strategy, "environment": environment},
            )
            return EnvLedger()

    def update(
        self,
        mirror: GitMirror,
        strategy: str,
        environment: str,
        change: Callable[[EnvLedger], EnvLedger],
    ) -> EnvLedger:
        """Apply ``change`` to the environment's ledger and push it; the new ledger."""
        data, sha = key_object(strategy, environment)
        with mirror.lock:
            for _ in range(ATTEMPTS):
                before = mirror.refs().get(LEDGER_REF)
                current = self.read(mirror, strategy, environment)
                new = change(current)
                if new == current:
                    return current
                mirror.write_blob(data)
                mirror.write_note(LEDGER_REF, sha, new.model_dump_json())
                try:
                    mirror.push([f"{LEDGER_REF}:{LEDGER_REF}"], leases={LEDGER_REF: before})
                except PushRejected:
                    log.info("ledger moved, retrying", extra={"strategy": strategy})
                    mirror.fetch()
                    continue
                return new
        raise GitError(f"the ledger of {strategy}/{environment} kept moving; try again")
