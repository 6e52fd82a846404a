"""A local bare mirror of one remote repository: refs, objects and notes, fetch and push.

Concurrency model:

* One bare mirror per repository, at ``<state_dir>/mirrors/<name>.git``, and one
  ``GitMirror`` instance per mirror in a process; there is never a working tree.
* Every public method runs under the mirror's ``threading.RLock`` (``mirror.lock``).
  Hold it yourself to make a sequence atomic, e.g. ``write_note`` then ``push``.
* The mirror copies the remote: a fetch force-updates and prunes ``refs/heads/*`` and
  ``refs/notes/*``. Anything written locally (notes, refs) must be pushed before the
  next refresh, which would otherwise discard it.
* Reads go through GitPython's persistent ``cat-file`` processes (no process per
  object). Refs are read once with ``for-each-ref`` and cached until the next fetch or
  local write, with the tree and commit time of every tip; trees, ancestry, metadata,
  changelogs and note contents are cached by immutable SHAs. The commit facts keep what
  was used lately (``caches.Recent``: the tips of every ref, and what the last thousands
  of reads asked), the metadata what was read at the hydrator notes' tip: a daemon that
  promotes for weeks holds the facts of the commits it works on, not of every commit it
  ever met. The first read of a notes
  tree reads every note it holds that is not cached yet, in one ``cat-file --batch``:
  a repository's work grows with its notes, not with its strategies' reads.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from promoter.errors import GitError, MetadataMissing
from promoter.git.ancestry import walk_ancestry
from promoter.git.bare import MIRRORED, BareRepository, Env
from promoter.git.caches import FACTS, BlobCache, Recent, TreeCache, remember
from promoter.git.credentials import url_secrets
from promoter.git.log_records import (
    AUTHORS_FORMAT,
    LOG_FORMAT,
    MAX_AUTHORS_LOG,
    parse_authors,
    parse_log,
)
from promoter.git.metadata import (
    METADATA_FILE,
    NOTES_REF,
    TREE_MODE,
    find_note,
    read_metadata,
)
from promoter.git.notes import fast_import_stream, notes_ref
from promoter.git.runner import git_error
from promoter.metrics import GIT_FETCHES_TOTAL, GIT_LS_REMOTE_TOTAL
from promoter.models import SHA_RE, Author, DryCommit, HydratorMetadata

T = TypeVar("T")

_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/notes/*:refs/notes/*")
_LOST_RACE = ("stale info", "non-fast-forward", "fetch first", "already exists")
"""Push refusals that mean another writer moved the ref first (retry on a fresh fetch)."""


class PushRejected(GitError):
    """The remote refused a push: a lease was stale or an update was not a fast-forward."""


class NotesMoved(GitError):
    """A notes write found its ref moved since this mirror read it, by another writer on
    the same directory (the mirror of a runtime being replaced): nothing was written;
    read the notes again and write on the new tip."""


def _is_sha(value: str) -> bool:
    return bool(SHA_RE.match(value))


class GitMirror(BareRepository):
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
        self._committer: str | None = None
        self._read_tree = TreeCache(self._data)
        self._tree_of: Recent[str, str] = Recent()
        self._ancestry: Recent[tuple[str, str], bool] = Recent()
        self._logs: dict[tuple[str | None, str, int], list[DryCommit]] = {}
        self._authors: dict[tuple[str | None, str, int], tuple[Author, ...]] = {}
        self._metadata: dict[str, HydratorMetadata | MetadataMissing] = {}
        self._metadata_notes = ""
        """The hydrator notes' tip ``_metadata`` was read at: a new tip may bring any
        commit a note, so the answers read at the old one are let go at once (kept until
        the cache's bound, they were never read again: a hydration moves the tip)."""
        self._commit_time: Recent[str, datetime] = Recent()
        self._stale: dict[str, str] = {}
        """The refs read before the last change, until they are read again (``_drop_refs``)."""
        self._notes = BlobCache()
        self._prefetched: set[str] = set()
        self._moved = False
        """A fetch brought a change that no ``take_moved`` has reported yet."""

    # -- refs ---------------------------------------------------------------------------

    def _heal(self) -> None:
        """The mirror was deleted under us (a cleaned state dir): clone it afresh, so that
        nothing reads or writes on top of an empty mirror (a ledger write would then push
        a notes commit that forgets every other note)."""
        if self._repo is None or (self.path / "HEAD").is_file():
            return
        with self._lock:
            self.close()
            self._drop_refs()
            self.ensure()
            self.fetch()

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
            self.ensure()
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
        branches), ``git clone`` writes them all into ``packed-refs`` at once.
        """
        with self._lock, self._notes_lock:
            GIT_FETCHES_TOTAL.labels(repository=self.name).inc()
            before = self._cached_refs()
            if not before:
                self._clone()
            else:
                self._drop_refs()
                args = ["fetch", "--prune", "--no-tags", "--no-write-fetch-head", "--quiet"]
                self._run([*args, "origin", *_REFSPECS], network=True)
            self._drop_refs()
            # Read now, so that an idle refresh is one ls-remote. Branches and the
            # hydrator's notes only: a fetch also resets the notes the promoter wrote and
            # has not pushed yet (its ledger, lineage, audit), its own doing.
            if _watched(self._cached_refs()) != _watched(before):
                self._moved = True

    def take_moved(self) -> bool:
        """Whether any fetch (a refresh's, a reconcile's, a ledger or audit write's retry)
        moved a branch or the hydrator's notes since the last call: the poller asks, so
        that a change another caller's fetch got first still wakes the strategies."""
        with self._lock:
            moved, self._moved = self._moved, False
            return moved

    def _clone(self) -> None:
        """Replace the (ref-less) mirror with a bare clone of every branch and notes ref."""
        staging = self.path.with_name(f"{self.path.name}.clone")
        shutil.rmtree(staging, ignore_errors=True)
        notes = f"remote.origin.fetch={_REFSPECS[1]}"
        args = ["clone", "--bare", "--no-local", "--no-tags", "--quiet", "--config", notes]
        try:
            self._run([*args, "--", self.url, str(staging)], network=True)
            self.close()
            shutil.rmtree(self.path)
            staging.rename(self.path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._identity = None
        self.ensure()

    # -- objects ------------------------------------------------------------------------

    def tree_sha(self, sha: str) -> str:
        """The tree of commit ``sha`` (or of a full ref name); ``GitError`` when unknown."""
        with self._lock:
            cached = self._tree_of.get(sha)
            if cached is not None:
                return cached
            header = self._header(f"{sha}^{{tree}}")
            if header is None:
                raise GitError(f"commit {sha} is not in mirror {self.name}")
            return self._tree_of.put(sha, header) if _is_sha(sha) else header

    def metadata(self, hydrated_sha: str) -> HydratorMetadata:
        """The dry commit of ``hydrated_sha``: from its hydrator note, else its metadata file."""
        sha = hydrated_sha.lower()
        with self._lock:
            notes = self._cached_refs().get(NOTES_REF, "")
            if notes != self._metadata_notes:
                self._metadata.clear()
                self._metadata_notes = notes
            cached = self._metadata.get(sha)
            if cached is None:
                cached = remember(self._metadata, sha, self._read_metadata(notes, sha))
            if isinstance(cached, MetadataMissing):
                raise MetadataMissing(str(cached))
            return cached

    def _read_metadata(self, notes: str, sha: str) -> HydratorMetadata | MetadataMissing:
        root = self._notes_root(NOTES_REF, notes) if notes else None
        blob = find_note(root, sha, self._read_tree) if root else None
        note = self._note(root, blob) if root and blob else None
        return read_metadata(sha, note=note, file=self._file(sha))

    def _file(self, sha: str) -> Callable[[], bytes | None]:
        def read() -> bytes | None:
            if not _is_sha(sha) or self._header(sha) is None:
                raise GitError(f"commit {sha} is not in mirror {self.name}")
            return self._data(f"{sha}:{METADATA_FILE}")

        return read

    def commit_time(self, sha: str) -> datetime | None:
        """When ``sha`` was committed (its committer date), or None for an unknown commit."""
        with self._lock:
            cached = self._commit_time.get(sha)
            if cached is not None:
                return cached
            found = super().commit_time(sha)
            if found is not None and _is_sha(sha):
                self._commit_time.put(sha, found)
            return found

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or one of its ancestors; False if unknown."""
        key = (ancestor.lower(), descendant.lower())
        if not (_is_sha(key[0]) and _is_sha(key[1])):
            return False
        with self._lock:
            cached = self._ancestry.get(key)
            if cached is not None:
                return cached
            walked = walk_ancestry(self._parents, *key)
            if walked is not None:
                return self._ancestry.put(key, walked)
            status, _, _ = self._run(["merge-base", "--is-ancestor", *key], ok=(0, 1, 128))
            if status == 128:  # an unknown commit: may be known after the next fetch
                return False
            return self._ancestry.put(key, status == 0)

    def _parents(self, sha: str) -> list[str] | None:
        commit = self.commit_parents(sha)
        return None if commit is None else commit[1]

    def log(self, since_exclusive: str | None, until: str, *, limit: int = 50) -> list[DryCommit]:
        """Commits reachable from ``until`` but not from ``since_exclusive``, newest first.

        Cached when both ends are SHAs: history below a commit never changes.
        """
        found = self._read_log(self._logs, LOG_FORMAT, since_exclusive, until, limit, parse_log)
        return list(found)

    def authors(self, since_exclusive: str | None, until: str) -> tuple[Author, ...]:
        """The authors and co-authors of the commits ``log`` would list, without its limit.

        ``GitError`` past ``MAX_AUTHORS_LOG`` commits. Cached when both ends are SHAs.
        """

        def parse(out: str) -> tuple[Author, ...]:
            if out.count("\x1e") > MAX_AUTHORS_LOG:
                raise GitError(f"more than {MAX_AUTHORS_LOG} commits to {until[:7]}")
            return parse_authors(out)

        limit = MAX_AUTHORS_LOG + 1
        return self._read_log(self._authors, AUTHORS_FORMAT, since_exclusive, until, limit, parse)

    def _read_log(
        self,
        cache: dict[tuple[str | None, str, int], T],
        form: str,
        since_exclusive: str | None,
        until: str,
        limit: int,
        parse: Callable[[str], T],
    ) -> T:
        """``git log --format=form`` of ``until`` but not ``since_exclusive``, parsed; kept
        in ``cache`` when both ends are SHAs."""
        key = (since_exclusive, until, limit)
        immutable = _is_sha(until) and (since_exclusive is None or _is_sha(since_exclusive))
        revs = [until] if since_exclusive is None else [until, f"^{since_exclusive}"]
        with self._lock:
            if immutable and key in cache:
                return cache[key]
            args = ["log", f"--format={form}", f"-n{limit}", "--end-of-options"]
            _, out, _ = self._run([*args, *revs, "--"])
            found = parse(out)
            if immutable:
                remember(cache, key, found, 1024)
        return found

    # -- writes -------------------------------------------------------------------------

    def push(self, refspecs: list[str], *, leases: Mapping[str, str | None]) -> None:
        """Push ``refspecs`` atomically, each lease a ``--force-with-lease`` (None: must not exist).

        ``PushRejected`` when the remote refuses (a stale lease, a non-fast-forward).
        """
        with self._lock:
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

    def write_note(self, ref: str, sha: str, text: str) -> None:
        """Set the note on ``sha`` under ``ref`` to exactly ``text`` (local: push it after)."""
        with self._lock:
            blob = self._run(["hash-object", "-w", "--stdin"], stdin=text.encode())[1].strip()
            self._drop_refs()
            self._run(
                ["notes", f"--ref={notes_ref(ref)}", "add", "-f", "-C", blob, sha], commit=True
            )

    def write_notes(
        self, ref: str, notes: Mapping[str, str], *, message: str, blobs: Iterable[bytes] = ()
    ) -> str:
        """Set many notes under ``ref`` in one commit, in one ``git fast-import``; the new tip.

        ``notes`` maps an object SHA (any object: a commit, or a synthetic key blob) to
        the note's exact text; ``blobs`` are stored too (the key blobs notes hang on).
        A note keeps the path (fan-out) it already has; a new one goes where git's
        notes reader looks first. The ref moves only as a fast-forward of its tip when
        this was called (``NotesMoved`` when another writer moved it since this mirror
        read it, ``GitError`` otherwise); local until pushed, like
        ``write_note``. One process whatever the number of notes, where ``write_note``
        costs two per note.
        """
        name = notes_ref(ref)
        with self._lock:
            self._ready()  # a deleted mirror is cloned again (a fetch) before its tip is read
        with self._lock, self._notes_lock:
            tip = self._cached_refs().get(name)
            root = self._notes_root(name, tip) if tip else None
            if self._committer is None:  # "Name <email>", as git would commit now
                ident = self._run(["var", "GIT_COMMITTER_IDENT"], commit=True)[1].strip()
                self._committer = ident.rsplit(" ", 2)[0]
            stream = fast_import_stream(
                ref=name,
                committer=self._committer,
                when=int(time.time()),
                tip=tip,
                root=root,
                notes=notes,
                message=message,
                blobs=blobs,
                read_tree=self._read_tree,
            )
            try:
                out = self._run(["fast-import", "--quiet", "--done"], stdin=stream, commit=True)[1]
            except BaseException as exc:
                self._reload_ref(name)
                if isinstance(exc, GitError) and self._cached_refs().get(name) != tip:
                    raise NotesMoved(f"{name} moved in mirror {self.name} meanwhile") from exc
                raise
            new = out.strip()
            if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", new) or new == tip:
                self._reload_ref(name)
                raise GitError(f"fast-import did not move {name} in mirror {self.name}")
            self._set_cached_ref(name, new)  # fast-import exits 0 only once the ref moved
            return new

    def read_note(self, ref: str, sha: str) -> str | None:
        """The note on ``sha`` under ``ref`` (``refs/notes/x`` or ``x``), or None."""
        found = self.note_object(ref, sha)
        return None if found is None else found[1].decode()

    def note_object(self, ref: str, sha: str) -> tuple[str, bytes] | None:
        """The note on ``sha`` under ``ref`` as ``(its blob's SHA, its bytes)``, or None:
        what is parsed from a note can be kept by its blob, which names its content."""
        with self._lock:
            name = notes_ref(ref)
            notes = self._cached_refs().get(name)
            if not notes:
                return None
            root = self._notes_root(name, notes)
            blob = find_note(root, sha, self._read_tree)
            if blob is None:
                return None
            data = self._note(root, blob)
            return None if data is None else (blob, data)

    def _notes_root(self, ref: str, tip: str) -> str:
        """The notes tree of ``ref`` at its commit ``tip``; the trees of its earlier tip
        leave the cache."""
        root = self.tree_sha(tip)
        self._read_tree.moved(ref, root)
        return root

    def _note(self, root: str, blob: str) -> bytes | None:
        """The content of note ``blob`` of the notes tree ``root``, cached."""
        if root not in self._prefetched:
            self._prefetch(root)
        data = self._notes.get(blob)
        if data is None:
            data = self._data(blob)
            if data is not None:
                self._notes.put(blob, data)
        return data

    def _prefetch(self, root: str) -> None:
        """Read every note of the notes tree ``root`` not cached yet, in one process."""
        if len(self._prefetched) >= 64:
            self._prefetched.clear()
        self._prefetched.add(root)
        missing: list[str] = []
        trees = [root]
        while trees:
            for mode, sha in self._read_tree(trees.pop()).values():
                if mode == TREE_MODE:
                    trees.append(sha)
                elif sha not in self._notes:
                    missing.append(sha)
        if len(missing) > 1:
            for blob, data in self._objects(missing).items():
                self._notes.put(blob, data)


def _watched(refs: dict[str, str]) -> dict[str, str]:
    """The refs whose move is news to the strategies: the branches and the hydrator's
    notes (a note-only hydrator writes a commit's metadata after the branch moved)."""
    return {
        ref: sha for ref, sha in refs.items() if ref.startswith("refs/heads/") or ref == NOTES_REF
    }
