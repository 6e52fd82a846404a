"""Notes in a mirror: read (the hydrator's metadata, the promoter's own notes) and written
(one note, or many in one ``git fast-import``).

The first read of a notes tree reads every note it holds that is not cached yet, in one
``cat-file --batch``: a repository's work grows with its notes, not with its strategies'
reads. Note contents are kept by blob SHA; the hydrator metadata only while the hydrator
notes' tip does not move (a hydration moves it).

A notes commit is written under ``lock`` and the notes lock; what it must do when the
write fails (read the ref again, which may heal a lost mirror) it does after leaving the
notes lock, never under it (``promoter.git``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from promoter.errors import GitError, MetadataMissing
from promoter.git.bare import Env
from promoter.git.caches import BlobCache, TreeCache, remember
from promoter.git.facts import is_sha
from promoter.git.metadata import METADATA_FILE, NOTES_REF, TREE_MODE, find_note, read_metadata
from promoter.git.notes import fast_import_stream, notes_ref
from promoter.git.remote_copy import RemoteCopy
from promoter.models import HydratorMetadata


class NotesMoved(GitError):
    """A notes write found its ref moved since this mirror read it, by another writer on
    the same directory (the mirror of a runtime being replaced), or the mirror was healed
    under it: nothing was written; read the notes again and write on the new tip."""


class MirrorNotes(RemoteCopy):
    """A mirror's notes, read and written (see the module)."""

    def __init__(
        self, *, name: str, url: str, root: Path, env: Env | None = None, timeout: float = 120.0
    ) -> None:
        super().__init__(name=name, url=url, root=root, env=env, timeout=timeout)
        self._committer: str | None = None
        self._read_tree = TreeCache(self._data)
        self._metadata: dict[str, HydratorMetadata | MetadataMissing] = {}
        self._metadata_notes = ""
        """The hydrator notes' tip ``_metadata`` was read at: a new tip may bring any
        commit a note, so the answers read at the old one are let go at once (kept until
        the cache's bound, they were never read again: a hydration moves the tip)."""
        self._notes = BlobCache()
        self._prefetched: set[str] = set()

    # -- the hydrator's metadata --------------------------------------------------------

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
            if not is_sha(sha) or self._header(sha) is None:
                raise GitError(f"commit {sha} is not in mirror {self.name}")
            return self._data(f"{sha}:{METADATA_FILE}")

        return read

    # -- writing ------------------------------------------------------------------------

    def write_note(self, ref: str, sha: str, text: str) -> None:
        """Set the note on ``sha`` under ``ref`` to exactly ``text`` (local: push it after)."""
        with self._lock:
            self._ready()  # healed first: not under the notes lock
            with self._notes_lock:
                blob = self._run(["hash-object", "-w", "--stdin"], stdin=text.encode())[1]
                self._drop_refs()
                self._run(
                    ["notes", f"--ref={notes_ref(ref)}", "add", "-f", "-C", blob.strip(), sha],
                    commit=True,
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
        read it, or a mirror lost meanwhile was cloned afresh; ``GitError`` otherwise);
        local until pushed, like ``write_note``. One process whatever the number of
        notes, where ``write_note`` costs two per note.
        """
        name = notes_ref(ref)
        with self._lock:
            self._ready()  # a deleted mirror is cloned again (a fetch) before its tip is read
            tip: str | None = None
            try:
                with self._notes_lock:
                    tip = self._cached_refs().get(name)
                    new = self._fast_import(name, tip, notes, message, blobs)
            except BaseException as exc:
                # Out of the notes lock: reading the ref again heals a mirror lost meanwhile.
                self._reload_ref(name)
                if isinstance(exc, GitError) and self._cached_refs().get(name) != tip:
                    raise NotesMoved(f"{name} moved in mirror {self.name} meanwhile") from exc
                raise
            if new is None:
                self._reload_ref(name)
                raise GitError(f"fast-import did not move {name} in mirror {self.name}")
            return new

    def _fast_import(
        self,
        name: str,
        tip: str | None,
        notes: Mapping[str, str],
        message: str,
        blobs: Iterable[bytes],
    ) -> str | None:
        """Under the notes lock: the notes commit on ``tip``, and the ref moved to it (None
        when git said it moved, and did not)."""
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
        out = self._run(["fast-import", "--quiet", "--done"], stdin=stream, commit=True)[1]
        new = out.strip()
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", new) or new == tip:
            return None
        self._set_cached_ref(name, new)  # fast-import exits 0 only once the ref moved
        return new

    # -- reading ------------------------------------------------------------------------

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
