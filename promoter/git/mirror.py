"""A local bare mirror of one remote repository: refs, objects and notes, fetch and push.

Concurrency model (the locks and their one order: ``promoter.git``):

* One bare mirror per repository, at ``<state_dir>/mirrors/<name>.git``, and one
  ``GitMirror`` instance per mirror in a process; there is never a working tree.
* Every public method runs under the mirror's re-entrant ``lock`` (``mirror.lock``).
  Hold it yourself to make a sequence atomic, e.g. ``write_note`` then ``push``. A push
  by SHA (``push_commit``) runs without it, under the notes lock alone, so reads and
  local writes go on during the network round trips.
* What moves a notes ref (a notes commit, a fetch, a push by SHA) also holds the notes
  lock. Its holder never heals the mirror nor waits for ``lock``: a mirror deleted or
  damaged under it fails that call (``MirrorLost``), and the next use heals it.
* The mirror copies the remote (``remote_copy``): a fetch force-updates and prunes
  ``refs/heads/*`` and ``refs/notes/*``. Anything written locally (notes, refs) must be
  pushed before the next refresh, which would otherwise discard it.
* Reads go through GitPython's persistent ``cat-file`` processes (no process per
  object). Refs are read once with ``for-each-ref`` and cached until the next fetch or
  local write; commit facts (``facts``), metadata and note contents (``mirror_notes``)
  are cached by immutable SHAs, within bounds.

The class is built in layers, one module each: ``bare`` (running git, objects, refs),
``facts`` (commits), ``remote_copy`` (fetch, clone, healing), ``mirror_notes`` (notes),
and this one (pushes and local ref moves).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from promoter.errors import GitError
from promoter.git.bare import Env
from promoter.git.mirror_notes import MirrorNotes
from promoter.git.process.credentials import url_secrets
from promoter.git.process.runner import git_error

_LOST_RACE = ("stale info", "non-fast-forward", "fetch first", "already exists")
"""Push refusals that mean another writer moved the ref first (retry on a fresh fetch)."""


class PushRejected(GitError):
    """The remote refused a push: a lease was stale or an update was not a fast-forward."""


class GitMirror(MirrorNotes):
    """A bare mirror of ``url`` under ``root``; see the module docstring for the rules."""

    def __init__(
        self,
        *,
        name: str,
        url: str,
        root: Path,
        env: Env | None = None,
        timeout: float = 120.0,
        push_guard: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        """``push_guard``: every push runs inside it (Kubernetes mode: the shard fence,
        which raises before anything is pushed when this replica may not write here)."""
        super().__init__(name=name, url=url, root=root, env=env, timeout=timeout)
        self._push_guard = push_guard

    def push(self, refspecs: list[str], *, leases: Mapping[str, str | None]) -> None:
        """Push ``refspecs`` atomically, each lease a ``--force-with-lease`` (None: must not exist).

        ``PushRejected`` when the remote refuses (a stale lease, a non-fast-forward).
        """
        with self._lock:
            self._ready()  # healed first: not under the notes lock
            with self._notes_lock:  # git moves the local refs it pushed (notes ones too)
                self._push(refspecs, leases)

    def push_commit(self, ref: str, sha: str, *, lease: str | None) -> None:
        """Push commit ``sha`` to ``ref`` on the remote, leased on ``lease``, unlocked.

        It names the commit rather than a local ref, so reads, fetches and local writes
        of the mirror go on during the network round trips (a fetch may even move the
        local ref meanwhile): what is pushed does not change. ``PushRejected`` as ``push``.
        """
        self._ready()  # a mirror deleted under us is cloned again first, under ``_lock``
        try:
            with self._notes_lock:
                self._push([f"{sha}:{ref}"], {ref: lease})
        finally:
            with self._lock:
                self._reload_ref(ref)  # git may have moved the local ref to ``sha``

    def _push(self, refspecs: list[str], leases: Mapping[str, str | None]) -> None:
        args = ["push", "--atomic", "--porcelain"]
        args += [f"--force-with-lease={ref}:{old or ''}" for ref, old in leases.items()]
        with self._push_guard():
            status, out, err = self._run([*args, "origin", *refspecs], network=True, ok=(0, 1))
        if status == 0:
            return
        refused = [" ".join(ln.split("\t")[1:]) for ln in out.splitlines() if ln[:1] == "!"]
        lost_race = any(reason in line for line in refused for reason in _LOST_RACE)
        if not lost_race:
            # Not a moved ref: a broken remote, a lock, a hook. Temporary, retried later.
            secrets = [*url_secrets(self.url), *self._extra_env().values()]
            raise git_error(["push"], status, err or out, secrets, f"in mirror {self.name}")
        raise PushRejected(f"push to {self.name} rejected: {'; '.join(refused)}")

    def keep_pushed(self, ref: str, sha: str, *, before: str | None) -> None:
        """After ``push_commit(ref, sha, lease=before)`` succeeded: the local ``ref`` at
        ``sha``. The local write put it there already, unless a fetch during the push
        took it back to ``before``; no git process unless one did."""
        with self._lock:
            if self.branch_sha(ref) != sha:
                self.set_ref(ref, sha, expected=before)

    def set_ref(self, ref: str, sha: str, *, expected: str | None) -> bool:
        """Move local ``ref`` to ``sha`` if it still is ``expected`` (None: absent)."""
        with self._lock:
            status, _, _ = self._run(["update-ref", ref, sha, expected or "0" * 40], ok=(0, 1, 128))
            self._reload_ref(ref)
            return status == 0
