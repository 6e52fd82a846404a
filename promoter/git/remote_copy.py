"""A mirror as a copy of its remote: the refs read with their facts, ``ls-remote``, fetch,
clone, and healing a copy deleted or damaged under the running daemon.

The mirror copies the remote: a fetch force-updates and prunes ``refs/heads/*`` and
``refs/notes/*``. Anything written locally (notes, refs) must be pushed before the next
refresh, which would otherwise discard it. Refs are read once with ``for-each-ref`` and
kept until the next fetch or local write, with the tree and commit time of every tip.

Healing (``_heal``) runs before a use, under ``lock`` and never under the notes lock
(``promoter.git``): a mirror deleted under the daemon (a cleaned state directory), or
one git can no longer read (files cut short: a full disk, a crash), is cloned afresh,
so that nothing reads or writes on top of an empty or broken mirror (a ledger write
would then push a notes commit that forgets every other note).

A remote that is a repository on this machine owned by the daemon's own user (the local
SCM's) is cloned by git's local copy: its object files copied as they are, not packed by
``upload-pack`` and indexed again by ``index-pack`` (half the CPU of a clone). Copied,
never hard-linked (``--no-hardlinks``): a mirror's files cut short or removed must leave
the remote whole, for the mirror to be cloned afresh from it. Any other remote, and a
local one owned by another user, goes through the transport (``--no-local``).
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from promoter.errors import GitError
from promoter.git.bare import MIRRORED, Env, MirrorLost
from promoter.git.caches import FACTS
from promoter.git.facts import CommitFacts
from promoter.git.metadata import NOTES_REF
from promoter.git.process.credentials import strip_credentials, url_secrets
from promoter.git.process.runner import run_git
from promoter.metrics import GIT_FETCHES_TOTAL, GIT_LS_REMOTE_TOTAL

REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/notes/*:refs/notes/*")


class RemoteCopy(CommitFacts):
    """A bare repository kept as a copy of ``url`` (see the module)."""

    def __init__(
        self, *, name: str, url: str, root: Path, env: Env | None = None, timeout: float = 120.0
    ) -> None:
        super().__init__(name=name, url=url, root=root, env=env, timeout=timeout)
        self._stale: dict[str, str] = {}
        """The refs read before the last change, until they are read again (``_drop_refs``)."""
        self._moved = False
        """A fetch brought a change that no ``take_moved`` has reported yet."""
        self._healing = False

    # -- healing ------------------------------------------------------------------------

    def _heal(self) -> None:
        """Clone the mirror afresh when it was deleted or damaged under us (the module).

        Under ``lock``; never under the notes lock (``BareRepository._usable``), since it
        fetches, which takes it. A damaged mirror is removed first; one that cannot be
        (a read-only file system) stays damaged, and the next use tries again."""
        if self._healing or self._lost() is None:
            return
        with self._lock:
            if self._healing or self._lost() is None:
                return  # another thread healed it meanwhile
            self._healing = True
            try:
                self.close()
                self._drop_refs()
                if self._damaged is not None:
                    self._remove()
                missing = self._missing()
                self.ensure()  # a missing mirror is cloned: that is its fetch
                if not missing:
                    self.fetch()
            finally:
                self._healing = False

    def _remove(self) -> None:
        """Remove the damaged mirror from disk (``GitError`` when it cannot be)."""
        try:
            _remove_tree(self.path)
        except OSError as exc:
            raise GitError(f"cannot remove the damaged mirror {self.name}: {exc}") from exc
        self._damaged = None
        self._identity = None
        self._origin_set = False

    # -- refs ---------------------------------------------------------------------------

    def _load_refs(self, *patterns: str) -> dict[str, str]:
        """The refs, and each tip's tree and commit time (primes ``tree_sha``, ``commit_time``).

        A full reading keeps the objects read before where a ref did not move: its name,
        its SHA and their facts stay the ones held, and what this reading parsed for
        them dies at once. A fetch reads thousands of refs of which a promotion moves a
        few; new objects for every one of them at each fetch, made amid a reconcile's
        own, would leave the heap holding them among freed memory."""
        fmt = "--format=%(objectname) %(tree) %(committerdate:unix) %(refname)"
        _, out, _ = self._run(["for-each-ref", fmt, *(patterns or MIRRORED)])
        before = iter(() if patterns else self._stale.items())
        known, known_sha = next(before, ("", ""))
        refs: dict[str, str] = {}
        for line in out.splitlines():
            sha, tree, when, ref = line.split(" ", 3)
            while known and known < ref:  # both in git's order of names
                known, known_sha = next(before, ("", ""))
            if known == ref:
                ref = known
                if known_sha == sha:
                    sha = known_sha
                    cached = (self._tree_of.get(sha), self._commit_time.get(sha))
                    if None not in cached:  # and now the newest in their caches
                        refs[ref] = sha
                        continue
            refs[ref] = sha
            if tree:
                self._tree_of.put(sha, tree)
            if when:
                self._commit_time.put(sha, datetime.fromtimestamp(int(when), tz=UTC))
        if not patterns:  # every tip stays cached from one reading of the refs to the next
            limit = max(FACTS, 2 * len(refs))
            self._tree_of.limit = self._commit_time.limit = self._ancestry.limit = limit
            self._stale = {}
        return refs

    def _drop_refs(self) -> None:
        """Under ``lock``: the refs are to be read again; what was read is kept until then,
        for ``_load_refs`` to reuse what did not move."""
        if self._refs is not None:
            self._stale = self._refs
        self._refs = None

    # -- the remote ---------------------------------------------------------------------

    def remote_refs(self) -> dict[str, str]:
        """The remote's ``refs/heads/*`` and ``refs/notes/*``, by ``git ls-remote``."""
        with self._lock:
            GIT_LS_REMOTE_TOTAL.labels(repository=self.name).inc()
            _, out, _ = self._run(
                ["ls-remote", "origin", *(f"{p}*" for p in MIRRORED)], network=True
            )
            pairs = (line.split("\t", 1) for line in out.splitlines() if "\t" in line)
            return {ref: sha for sha, ref in pairs if ref.startswith(MIRRORED)}

    def refresh(self) -> bool:
        """Fetch when the remote's refs differ from the mirror's; whether anything moved.

        A mirror that holds no ref yet is cloned without asking the remote first: the
        clone says what it holds (and of an empty remote, that it holds nothing)."""
        with self._lock:
            cloned = self._repo is None and self._missing()
            self.ensure()  # clones a missing mirror
            if cloned:
                return bool(self._cached_refs())
            if not self._cached_refs():
                self.fetch()
                return bool(self._cached_refs())
            if self.remote_refs() == self._cached_refs():
                return False
            self.fetch()
            return True

    def fetch(self) -> None:
        """Fetch every branch and notes ref, force-updating and pruning.

        A mirror that holds no ref yet is cloned instead: ``git fetch`` writes one loose
        ref file per branch (seconds for a repository with thousands of environment
        branches), ``git clone`` writes them all into ``packed-refs`` at once. The
        mirror is healed first, before the notes lock is taken; lost again meanwhile,
        the fetch fails with ``MirrorLost`` and the next use heals it.
        """
        with self._lock:
            self._ready()
            with self._notes_lock:
                GIT_FETCHES_TOTAL.labels(repository=self.name).inc()
                before = self._cached_refs()
                if not before:
                    self._clone()
                else:
                    self._drop_refs()
                    args = ["fetch", "--prune", "--no-tags", "--no-write-fetch-head", "--quiet"]
                    self._run([*args, "origin", *REFSPECS], network=True)
                self._drop_refs()
                # Read now, so that an idle refresh is one ls-remote. Branches and the
                # hydrator's notes only: a fetch also resets the notes the promoter wrote
                # and has not pushed yet (its ledger, lineage, audit), its own doing.
                if _watched(self._cached_refs()) != _watched(before):
                    self._moved = True

    def take_moved(self) -> bool:
        """Whether any fetch (a refresh's, a reconcile's, a ledger or audit write's retry)
        moved a branch or the hydrator's notes since the last call: the poller asks, so
        that a change another caller's fetch got first still wakes the strategies."""
        with self._lock:
            moved, self._moved = self._moved, False
            return moved

    def ensure(self) -> None:
        """A missing mirror is made by cloning its remote (its first fetch), not by ``git
        init`` and a first fetch that throws that repository away for a clone."""
        with self._lock:
            if self._repo is not None or not self._missing() or self._notes_lock.held():
                super().ensure()
                return
            with self._notes_lock:
                GIT_FETCHES_TOTAL.labels(repository=self.name).inc()
                self._clone_files()
            self._drop_refs()
            super().ensure()
            if _watched(self._cached_refs()):
                self._moved = True

    def _missing(self) -> bool:
        return not (self.path / "HEAD").is_file()

    def _clone(self) -> None:
        """Replace the (ref-less) mirror with a bare clone of every branch and notes ref."""
        self.close()
        self._clone_files()
        self.ensure()

    def _clone_files(self) -> None:
        """Clone the remote beside the mirror, then put the clone in the mirror's place."""
        staging = self.path.with_name(f"{self.path.name}.clone")
        shutil.rmtree(staging, ignore_errors=True)
        notes = f"remote.origin.fetch={REFSPECS[1]}"
        args = ["clone", "--bare", "--no-tags", "--quiet", "--config", notes]
        args.append("--no-hardlinks" if own_local_repository(self.url) else "--no-local")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            run_git(
                [*args, "--", self.url, str(staging)],
                cwd=self.path.parent,
                env=self._extra_env(),
                timeout=self._timeout,
                secrets=url_secrets(self.url),
                what=f"of {strip_credentials(self.url)} in mirror {self.name}",
            )
            _remove_tree(self.path)
            staging.rename(self.path)
        except OSError as exc:  # the state directory read-only, or removed meanwhile
            raise MirrorLost(f"cannot put the clone of mirror {self.name} in place: {exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._identity = None
        self._damaged = None
        self._origin_set = True  # the clone's origin is ``url``


def own_local_repository(url: str) -> bool:
    """Whether ``url`` is an absolute path (not a URL: git copies nothing locally for
    ``file://``) to a repository owned by this process's user."""
    if not url.startswith("/"):
        return False
    try:
        return Path(url).stat().st_uid == os.geteuid()
    except OSError:
        return False


def _remove_tree(path: Path) -> None:
    """Remove ``path`` and what it holds; what is gone already is no error."""

    try:
        shutil.rmtree(path)
    except FileNotFoundError:  # another remover was there first, or is still at it
        shutil.rmtree(path, ignore_errors=True)
        if path.exists():
            raise


def _watched(refs: dict[str, str]) -> dict[str, str]:
    """The refs whose move is news to the strategies: the branches and the hydrator's
    notes (a note-only hydrator writes a commit's metadata after the branch moved)."""
    return {
        ref: sha for ref, sha in refs.items() if ref.startswith("refs/heads/") or ref == NOTES_REF
    }
