"""Git for the promoter: the bare mirror per repository, hydrator metadata and the lineage
of commits that merges made, running git.

Every git process goes through ``run_git``; reads of objects go through the mirror's
persistent ``cat-file``.

Concurrency: one bare mirror per repository, one ``GitMirror`` per mirror in a process,
no working tree (``mirror.py`` says how a mirror is used). The locks of the mirrors and
of what writes through them are taken in this one order: a thread that holds one takes
only those below it, never one above (the mirror's ``lock``, the one re-entrant lock,
may be taken again by its holder):

1. ``MirrorPool``'s refresh lock of a repository: one refresh of a mirror at a time.
2. ``GitMirror.lock``: the mirror's refs, caches, objects and local writes. The ledger,
   the audit notes, the lineage and the revert writer hold it around a read then a write.
3. The mirror's notes lock: what moves a notes ref or pushes (a notes commit, a fetch, a
   push; a push by SHA holds it without ``lock``). Never taken twice by one thread (the
   second take raises ``LockReentered``). Its holder never waits for ``lock`` and never
   heals the mirror (healing fetches, which takes it): a mirror deleted or damaged
   under it fails that call with ``MirrorLost`` (a ``GitError``: a ledger or audit write
   keeps its changes for the next flush), and the next use, under ``lock`` alone, heals.
4. The audit's journal lock (``state.audit``): never held while a mirror is used.
5. Leaves, under which no other lock is taken and no git runs: the shard fence's
   (a push's guard, Kubernetes mode), the ledger's guard of its pending changes, the
   pool's guard of its table, the watchdog's registry.

Every one of them is a ``promoter.watchdog.WatchedLock``, and every git command runs
watched: one held or running past its deadline is logged with its holder's stack and
counted (``promoter_watchdog_overdue_total``).
"""

from promoter.git.bare import MirrorLost
from promoter.git.identity import FALLBACK_EMAIL, FALLBACK_NAME, identity_env
from promoter.git.lineage import LINEAGE_REF, Lineage
from promoter.git.metadata import (
    METADATA_FILE,
    NOTES_REF,
    find_note,
    parse_metadata,
    read_metadata,
    render_metadata,
)
from promoter.git.mirror import GitMirror, PushRejected
from promoter.git.mirror_notes import NotesMoved
from promoter.git.process.credentials import redact, strip_credentials
from promoter.git.process.runner import git_error, run_git

__all__ = [
    "FALLBACK_EMAIL",
    "FALLBACK_NAME",
    "LINEAGE_REF",
    "METADATA_FILE",
    "NOTES_REF",
    "GitMirror",
    "Lineage",
    "MirrorLost",
    "NotesMoved",
    "PushRejected",
    "find_note",
    "git_error",
    "identity_env",
    "parse_metadata",
    "read_metadata",
    "redact",
    "render_metadata",
    "run_git",
    "strip_credentials",
]
