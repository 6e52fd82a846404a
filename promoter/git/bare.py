"""A bare repository on disk, run through ``run_git`` and a persistent ``cat-file``.

The base of ``GitMirror``: it knows how to run git in the repository, read objects and
refs, and write objects and refs; the mirror adds what copying a remote means. Every
method runs under the repository's re-entrant ``lock``; what moves a notes ref also
under its ``notes_lock`` (the order and the rules: ``promoter.git``).

Before each use a repository deleted or damaged under it is healed (``_heal``: the
mirror clones itself afresh), never while the calling thread holds the notes lock:
there the call fails with ``MirrorLost`` and the next use heals.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from git import Repo
from git.exc import GitError as GitPythonError

from promoter.errors import GitError
from promoter.git.damage import damaged
from promoter.git.identity import identity_env
from promoter.git.process.credentials import strip_credentials, url_secrets
from promoter.git.process.runner import run_git
from promoter.git.process.stale_lock import clear_stale_locks
from promoter.watchdog import WatchedLock

_NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://|^[^/]+:")
MIRRORED = ("refs/heads/", "refs/notes/")
"""The refs a mirror copies from its remote."""
HEAL_CHECK = 0.5
"""Seconds between two checks, on object reads, that the repository is still on disk
(every git command checks first)."""

Env = Mapping[str, str] | Callable[[], Mapping[str, str]]


class MirrorLost(GitError):
    """The repository was deleted or damaged under a call that may not heal it (it holds
    the notes lock): nothing was written; the next use clones the mirror afresh."""


class BareRepository:
    """The bare repository at ``<root>/mirrors/<name>.git`` whose ``origin`` is ``url``."""

    def __init__(
        self, *, name: str, url: str, root: Path, env: Env | None = None, timeout: float = 120.0
    ) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid mirror name {name!r}")
        self.name = name
        self.url = url if _URL_RE.match(url) else str(Path(url).absolute())
        self.path = (Path(root) / "mirrors" / f"{name}.git").absolute()
        self._env = env
        self._timeout = timeout
        self._lock = WatchedLock("mirror", detail=name, deadline=2 * timeout + 60, reentrant=True)
        """A refresh holds it for two network calls (``ls-remote``, then a fetch)."""
        self._notes_lock = WatchedLock("mirror notes", detail=name, deadline=timeout + 60)
        """Held by what moves a notes ref: a notes commit, a fetch, and a push by SHA (which
        runs without ``_lock``, and git moves the local ref after it: the fetch refspec
        maps it). Taken after ``_lock``; never re-entered, and its holder never waits for
        ``_lock`` nor heals the repository."""
        self._repo: Repo | None = None
        self._identity: dict[str, str] | None = None
        self._refs: dict[str, str] | None = None
        self._checked = float("-inf")
        self._damaged: str | None = None
        """What git said when it found the repository damaged; the next use heals it."""
        self._origin_set = False
        """This process set the repository's ``origin`` to ``url`` (a clone did, or
        ``ensure``): not set again each time the repository is opened."""

    @property
    def lock(self) -> WatchedLock:
        """The mirror's lock; hold it to run several operations as one."""
        return self._lock

    def close(self) -> None:
        """Stop GitPython's persistent ``cat-file`` processes."""
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    def __enter__(self) -> BareRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running git ------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the bare mirror if it is missing and point its ``origin`` at ``url``.

        The mirror counts as ready only once its ``origin`` is set: a set-up that fails
        half-way (a lock, a full disk) is done again from the start by the next use.
        """
        with self._lock:
            if self._repo is not None:
                return
            try:
                repo = self._open()
            except (OSError, GitPythonError) as exc:
                raise GitError(f"cannot create the mirror at {self.path}: {exc}") from exc
            try:
                if not self._origin_set:
                    run_git(
                        ["config", "remote.origin.url", self.url],
                        cwd=self.path,
                        secrets=url_secrets(self.url),
                        what=f"in mirror {self.name}",
                    )
            except GitError:
                repo.close()
                raise
            self._origin_set = True
            self._repo = repo

    def _open(self) -> Repo:
        """The repository, initialised first if missing. One that a process killed during
        ``git init`` left half made (a HEAD, no refs or objects) is initialised again:
        ``git init`` keeps what an existing repository holds."""
        if not (self.path / "HEAD").is_file():
            self._origin_set = False
            self.path.mkdir(parents=True, exist_ok=True)
            run_git(["init", "--bare", "--quiet", str(self.path)])
        clear_stale_locks(self.path)
        try:
            repo = Repo(self.path)
        except GitPythonError:
            self._origin_set = False
            run_git(["init", "--bare", "--quiet", str(self.path)])
            repo = Repo(self.path)
        repo.git.update_environment(GIT_CEILING_DIRECTORIES=str(self.path.parent))
        return repo

    def _lost(self) -> str | None:
        """Why the repository cannot be used as it is (deleted, damaged), or None."""
        if self._damaged is not None:
            return self._damaged
        opened = self._repo is not None or self._refs is not None
        if opened and not (self.path / "HEAD").is_file():
            return "deleted"
        return None

    def _heal(self) -> None:
        """Called before every use, never under the notes lock: a subclass repairs a
        repository deleted or damaged under it."""

    def _usable(self, *, check: bool = True) -> None:
        """Heal the repository if it was lost; under the notes lock, fail instead.

        Without ``check`` (an object read), whether it is still on disk is checked at
        most every ``HEAL_CHECK`` seconds: a read costs microseconds, a ``stat`` more.
        """
        now = time.monotonic()
        if not check and now - self._checked <= HEAL_CHECK and self._damaged is None:
            return
        self._checked = now
        if not self._notes_lock.held():
            self._heal()
            return
        lost = self._lost()
        if lost is not None:
            raise MirrorLost(f"mirror {self.name} lost under a notes write ({lost}); healed next")

    def _ready(self, *, check: bool = True) -> Repo:
        """The mirror's repository (its persistent ``cat-file``), healed or created first
        (under the notes lock: as it is, or ``MirrorLost``)."""
        self._usable(check=check)
        if self._repo is None:
            if self._notes_lock.held():
                raise MirrorLost(f"mirror {self.name} closed under a notes write")
            self.ensure()
        assert self._repo is not None
        return self._repo

    def _reader_failed(self, exc: BaseException) -> None:
        """The persistent ``cat-file`` answered nothing (it stopped: the repository was
        deleted or damaged under it): close it, and have the next use heal."""
        self._damaged = f"the object reader stopped: {exc}"
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    def _extra_env(self) -> dict[str, str]:
        env = self._env() if callable(self._env) else self._env
        return dict(env or {})

    def _run(
        self,
        args: list[str],
        *,
        network: bool = False,
        commit: bool = False,
        stdin: bytes | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> tuple[int, str, str]:
        """Run ``git args`` in the mirror: ``(status, stdout, stderr)``; ``GitError`` if not ok.

        Only a command that reaches the remote (``network``) reads the credentials: a
        local one has no use for them, and they may cost a call to a plugin.
        """
        env = self._extra_env() if network else {}
        if commit:
            if self._identity is None:
                self._identity = identity_env(git_dir=self.path)
            env = {**self._identity, **env}
        what = f"of {strip_credentials(self.url)} " if network else ""
        if self._notes_lock.held():
            self._usable()
        else:
            self._ready()
        try:
            return run_git(
                args,
                cwd=self.path,
                env=env,
                stdin=stdin,
                ok=ok,
                timeout=self._timeout if network else None,
                secrets=url_secrets(self.url),
                what=f"{what}in mirror {self.name}",
                ceiling=self.path.parent,
            )
        except GitError as exc:
            self._note_damage(str(exc))
            raise

    def _note_damage(self, message: str) -> None:
        """After a failed command: remember a damaged repository, for the next use to heal."""
        if damaged(message) and (self.path / "HEAD").exists():
            self._damaged = message.splitlines()[0][:500]

    def _header(self, rev: str) -> str | None:
        """The SHA ``rev`` names, through the persistent ``cat-file --batch-check``."""
        if "\n" in rev:
            return None
        found = self._read_object(rev, header=True)
        sha: str | bytes = found[0] if found is not None else ""
        return (sha.decode() if isinstance(sha, bytes) else sha) or None  # typed str, is bytes

    def _data(self, rev: str) -> bytes | None:
        """The content of ``rev``, through the persistent ``cat-file --batch``."""
        found = None if "\n" in rev else self._read_object(rev)
        return found[3] if found is not None else None

    def _commit_data(self, sha: str) -> bytes | None:
        """The content of commit ``sha``; None when missing or not a commit."""
        found = None if "\n" in sha else self._read_object(sha)
        return found[3] if found is not None and found[1] in (b"commit", "commit") else None

    def _read_object(self, rev: str, *, header: bool = False) -> tuple[Any, ...] | None:
        """``(sha, type, size[, data])`` of ``rev`` through the persistent ``cat-file``;
        None when the repository has no such object. A reader that stopped answering
        (``GitError``) is closed and the repository healed on its next use."""
        repo = self._ready(check=False)
        try:
            if header:
                return tuple(repo.git.get_object_header(rev))
            return tuple(repo.git.get_object_data(rev))
        except ValueError as exc:
            if "could not be resolved" in str(exc):
                return None  # "<rev> missing": no such object
            self._reader_failed(exc)
            raise GitError(f"cannot read {rev} in mirror {self.name}: {exc}") from exc
        except OSError as exc:  # a broken pipe: the reader is gone
            self._reader_failed(exc)
            raise GitError(f"cannot read {rev} in mirror {self.name}: {exc}") from exc

    def _objects(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The content of many objects at once: one ``git cat-file --batch`` for all of
        them, where ``_data`` costs a round trip to the persistent process each. Objects
        the repository lacks are left out."""
        wanted = [s for s in dict.fromkeys(shas) if s and "\n" not in s]
        if not wanted:
            return {}
        out = self._run_bytes(["cat-file", "--batch"], ("\n".join(wanted) + "\n").encode())
        found: dict[str, bytes] = {}
        at = 0
        for sha in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split(b" ")
            at = end + 1
            if len(header) != 3:  # "<sha> missing"
                continue
            size = int(header[2])
            found[sha] = out[at : at + size]
            at += size + 1
        return found

    def _run_bytes(self, args: list[str], stdin: bytes) -> bytes:
        """Run a local ``git args`` whose output is binary (object contents)."""
        self._ready()
        what, ceiling = f"in mirror {self.name}", self.path.parent
        try:
            out = run_git(
                args, cwd=self.path, stdin=stdin, what=what, encoding="latin-1", ceiling=ceiling
            )[1]
        except GitError as exc:
            self._note_damage(str(exc))
            raise
        return out.encode("latin-1")

    # -- refs ---------------------------------------------------------------------------

    def _cached_refs(self) -> dict[str, str]:
        self._ready(check=False)
        if self._refs is None:
            self._refs = self._load_refs()
        return self._refs

    def _load_refs(self, *patterns: str) -> dict[str, str]:
        """``ref -> SHA`` of the mirrored refs (or of ``patterns``), with one ``for-each-ref``."""
        fmt = "--format=%(objectname) %(refname)"
        _, out, _ = self._run(["for-each-ref", fmt, *(patterns or MIRRORED)])
        return dict(line.split(" ", 1)[::-1] for line in out.splitlines() if line)

    def _reload_ref(self, ref: str) -> None:
        """Under ``lock``, after a local write moved ``ref``: read that one ref again into
        the refs read (a new dict: readers without the lock see the old one or the new).
        Reading every ref again would cost a ``for-each-ref`` of thousands of branches for
        each ledger write at 10,000 strategies."""
        refs = self._refs
        if refs is None:
            return
        try:
            found = self._load_refs(ref).get(ref)  # a pattern matches refs below it too
        except BaseException:
            self._refs = None  # read them all again, next time
            raise
        if self._refs is not refs:
            return  # healed meanwhile: the refs read since are newer than this one
        updated = dict(refs)
        if found is None:
            updated.pop(ref, None)
        else:
            updated[ref] = found
        self._refs = updated

    def _set_cached_ref(self, ref: str, sha: str) -> None:
        """Under ``lock``, after a local write moved ``ref`` to ``sha`` and said so: the
        refs read updated without reading it again (a new dict, as ``_reload_ref``)."""
        if self._refs is not None:
            self._refs = {**self._refs, ref: sha}

    def refs(self) -> dict[str, str]:
        """The mirror's ``refs/heads/*`` and ``refs/notes/*`` (cached until the next change)."""
        with self._lock:
            return dict(self._cached_refs())

    def known_tip(self, branch: str) -> str | None:
        """The tip of ``branch`` as last read, from memory only (None when not read):
        for callers that must not run git, such as a webhook request."""
        refs = self._refs
        return None if refs is None else refs.get(f"refs/heads/{branch}")

    def branch_sha(self, branch: str) -> str | None:
        """The tip of ``branch`` (``environment/dev`` or ``refs/heads/environment/dev``)."""
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        refs = self._refs  # read without the lock: a writer replaces it whole, never edits it
        if refs is not None:
            return refs.get(ref)
        with self._lock:
            return self._cached_refs().get(ref)
