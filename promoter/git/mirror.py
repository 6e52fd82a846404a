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
  local write; trees, ancestry, metadata and changelogs are cached by immutable SHAs.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from git import Git, Repo
from git.exc import GitError as GitPythonError
from git.objects.fun import tree_entries_from_data

from promoter.errors import GitError, MetadataMissing
from promoter.git.identity import git_error, identity_env, run_git, strip_credentials, url_secrets
from promoter.git.metadata import (
    METADATA_FILE,
    NOTES_REF,
    TREE_MODE,
    TreeEntries,
    find_note,
    read_metadata,
)
from promoter.git.stale_lock import clear_stale_lock, clear_stale_locks
from promoter.metrics import GIT_FETCHES_TOTAL, GIT_LS_REMOTE_TOTAL
from promoter.models import SHA_RE, DryCommit, HydratorMetadata

K = TypeVar("K")
V = TypeVar("V")

_NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://|^[^/]+:")
_MIRRORED = ("refs/heads/", "refs/notes/")
_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/notes/*:refs/notes/*")
_ZERO = "0" * 40
_LOST_RACE = ("stale info", "non-fast-forward", "fetch first", "already exists")
"""Push refusals that mean another writer moved the ref first (retry on a fresh fetch)."""
_TREE_ENTRIES = 200_000
"""Tree entries kept in the cache of parsed trees (about 50 MB)."""
_LOG_FORMAT = "%H%x1f%s%x1f%an%x1f%aI%x1e"

Env = Mapping[str, str] | Callable[[], Mapping[str, str]]


class PushRejected(GitError):
    """The remote refused a push: a lease was stale or an update was not a fast-forward."""


def _remember(cache: dict[K, V], key: K, value: V, limit: int = 1 << 16) -> V:
    """Store ``value``; a full cache starts over (it holds immutable facts, cheap to redo)."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def _is_sha(value: str) -> bool:
    return bool(SHA_RE.match(value))


def _notes_ref(ref: str) -> str:
    return ref if ref.startswith("refs/") else f"refs/notes/{ref}"


def _fast_import_data(command: bytes, data: bytes) -> bytes:
    """A fast-import command line followed by its exact-length ``data``."""
    return command + b"\ndata %d\n" % len(data) + data + b"\n"


def _note_path(root: str | None, target: str, read_tree: Callable[[str], TreeEntries]) -> str:
    """Where the note on ``target`` lives in the notes tree ``root``, or should go.

    An existing note keeps its path; a new one goes under the fan-out directories the
    tree already has for its prefix, else flat at that level (git reads both).
    """
    tree, rest, prefix = root, target, ""
    while tree is not None and len(rest) > 2:
        entries = read_tree(tree)
        if rest in entries and entries[rest][0] != TREE_MODE:
            break
        sub = entries.get(rest[:2])
        if sub is None or sub[0] != TREE_MODE:
            break
        tree, prefix, rest = sub[1], f"{prefix}{rest[:2]}/", rest[2:]
    return f"{prefix}{rest}"


class GitMirror:
    """A bare mirror of ``url`` under ``root``; see the module docstring for the rules."""

    def __init__(
        self, *, name: str, url: str, root: Path, env: Env | None = None, timeout: float = 120.0
    ) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid mirror name {name!r}")
        self.name = name
        self.url = url if _URL_RE.match(url) else str(Path(url).absolute())
        self.path = Path(root) / "mirrors" / f"{name}.git"
        self._env = env
        self._timeout = timeout
        self._lock = threading.RLock()
        self._repo: Repo | None = None
        self._identity: dict[str, str] | None = None
        self._committer: str | None = None
        self._refs: dict[str, str] | None = None
        self._trees: dict[str, TreeEntries] = {}
        self._tree_entries = 0
        self._tree_of: dict[str, str] = {}
        self._ancestry: dict[tuple[str, str], bool] = {}
        self._logs: dict[tuple[str | None, str, int], tuple[DryCommit, ...]] = {}
        self._metadata: dict[tuple[str, str], HydratorMetadata | MetadataMissing] = {}

    @property
    def lock(self) -> threading.RLock:
        """The mirror's lock; hold it to run several operations as one."""
        return self._lock

    def close(self) -> None:
        """Stop GitPython's persistent ``cat-file`` processes."""
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    def __enter__(self) -> GitMirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running git ------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the bare mirror if it is missing and point its ``origin`` at ``url``."""
        with self._lock:
            if self._repo is not None:
                return
            try:
                if not (self.path / "HEAD").is_file():
                    self.path.mkdir(parents=True, exist_ok=True)
                    Repo.init(self.path, bare=True).close()
                clear_stale_locks(self.path)
                self._repo = Repo(self.path)
            except (OSError, GitPythonError) as exc:
                raise GitError(f"cannot create the mirror at {self.path}: {exc}") from exc
            self._run(["config", "remote.origin.url", self.url])

    def _heal(self) -> None:
        """The mirror was deleted under us (a cleaned state dir): clone it afresh, so that
        nothing reads or writes on top of an empty mirror (a ledger write would then push
        a notes commit that forgets every other note)."""
        if self._repo is None or (self.path / "HEAD").is_file():
            return
        with self._lock:
            self.close()
            self._refs = None
            self.ensure()
            self.fetch()

    def _git(self) -> Git:
        self._heal()
        if self._repo is None:
            self.ensure()
        assert self._repo is not None
        return self._repo.git

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
        """Run ``git args`` in the mirror: ``(status, stdout, stderr)``; ``GitError`` if not ok."""
        env = self._extra_env()
        if commit:
            if self._identity is None:
                self._identity = identity_env(git_dir=self.path)
            env = {**self._identity, **env}
        what = f"of {strip_credentials(self.url)} " if network else ""
        for attempt in (1, 2):
            try:
                result = run_git(
                    self._git(),
                    args,
                    env=env,
                    stdin=stdin,
                    ok=ok,
                    timeout=self._timeout if network else None,
                    secrets=url_secrets(self.url),
                    what=f"{what}in mirror {self.name}",
                )
            except GitError as exc:
                cause = exc.__cause__
                stderr = str(getattr(cause, "stderr", "") or exc)
                if attempt == 1 and clear_stale_lock(stderr):
                    continue
                raise
            if result[0] != 0 and attempt == 1 and clear_stale_lock(result[2]):
                continue  # an abandoned lock in the remote (a local path) refused a push
            return result
        raise AssertionError("unreachable")

    def _header(self, rev: str) -> str | None:
        """The SHA ``rev`` names, through the persistent ``cat-file --batch-check``."""
        try:
            sha: str | bytes = "" if "\n" in rev else self._git().get_object_header(rev)[0]
        except ValueError:
            return None
        return (sha.decode() if isinstance(sha, bytes) else sha) or None  # typed str, is bytes

    def _data(self, rev: str) -> bytes | None:
        """The content of ``rev``, through the persistent ``cat-file --batch``."""
        try:
            return None if "\n" in rev else self._git().get_object_data(rev)[3]
        except ValueError:
            return None

    def _read_tree(self, tree: str) -> TreeEntries:
        cached = self._trees.get(tree)
        if cached is not None:
            return cached
        data = self._data(tree) or b""
        entries = {name: (mode, sha.hex()) for sha, mode, name in tree_entries_from_data(data)}
        # Bounded by entries, not trees: every ledger write makes a new notes tree of
        # thousands of entries, and thousands of those would hold hundreds of MB.
        self._tree_entries += len(entries)
        if self._tree_entries > _TREE_ENTRIES or len(self._trees) >= 4096:
            self._trees.clear()
            self._tree_entries = len(entries)
        self._trees[tree] = entries
        return entries

    # -- refs ---------------------------------------------------------------------------

    def _cached_refs(self) -> dict[str, str]:
        self._heal()
        if self._refs is None:
            fmt = "--format=%(objectname) %(refname)"
            _, out, _ = self._run(["for-each-ref", fmt, *_MIRRORED])
            self._refs = dict(line.split(" ", 1)[::-1] for line in out.splitlines() if line)
        return self._refs

    def refs(self) -> dict[str, str]:
        """The mirror's ``refs/heads/*`` and ``refs/notes/*`` (cached until the next change)."""
        with self._lock:
            return dict(self._cached_refs())

    def branch_sha(self, branch: str) -> str | None:
        """The tip of ``branch`` (``environment/dev`` or ``refs/heads/environment/dev``)."""
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        with self._lock:
            return self._cached_refs().get(ref)

    def remote_refs(self) -> dict[str, str]:
        """The remote's ``refs/heads/*`` and ``refs/notes/*``, by ``git ls-remote``."""
        with self._lock:
            GIT_LS_REMOTE_TOTAL.labels(repository=self.name).inc()
            _, out, _ = self._run(
                ["ls-remote", "origin", *(f"{p}*" for p in _MIRRORED)], network=True
            )
            pairs = (line.split("\t", 1) for line in out.splitlines() if "\t" in line)
            return {ref: sha for sha, ref in pairs if ref.startswith(_MIRRORED)}

    def refresh(self) -> bool:
        """Fetch when the remote's refs differ from the mirror's; whether it fetched."""
        with self._lock:
            self.ensure()
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
        with self._lock:
            GIT_FETCHES_TOTAL.labels(repository=self.name).inc()
            if not self._cached_refs():
                self._clone()
            else:
                self._refs = None
                args = ["fetch", "--prune", "--no-tags", "--no-write-fetch-head", "--quiet"]
                self._run([*args, "origin", *_REFSPECS], network=True)
            self._refs = None
            self._cached_refs()  # read now, so that an idle refresh is one ls-remote

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
            return _remember(self._tree_of, sha, header) if _is_sha(sha) else header

    def metadata(self, hydrated_sha: str) -> HydratorMetadata:
        """The dry commit of ``hydrated_sha``: from its hydrator note, else its metadata file."""
        sha = hydrated_sha.lower()
        with self._lock:
            notes = self._cached_refs().get(NOTES_REF, "")
            cached = self._metadata.get((notes, sha))
            if cached is None:
                cached = _remember(self._metadata, (notes, sha), self._read_metadata(notes, sha))
            if isinstance(cached, MetadataMissing):
                raise MetadataMissing(str(cached))
            return cached

    def _read_metadata(self, notes: str, sha: str) -> HydratorMetadata | MetadataMissing:
        blob = find_note(self.tree_sha(notes), sha, self._read_tree) if notes else None
        return read_metadata(sha, note=self._data(blob) if blob else None, file=self._file(sha))

    def _file(self, sha: str) -> Callable[[], bytes | None]:
        def read() -> bytes | None:
            if not _is_sha(sha) or self._header(sha) is None:
                raise GitError(f"commit {sha} is not in mirror {self.name}")
            return self._data(f"{sha}:{METADATA_FILE}")

        return read

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or one of its ancestors; False if unknown."""
        key = (ancestor.lower(), descendant.lower())
        if not (_is_sha(key[0]) and _is_sha(key[1])):
            return False
        with self._lock:
            cached = self._ancestry.get(key)
            if cached is not None:
                return cached
            status, _, _ = self._run(["merge-base", "--is-ancestor", *key], ok=(0, 1, 128))
            if status == 128:  # an unknown commit: may be known after the next fetch
                return False
            return _remember(self._ancestry, key, status == 0)

    def log(self, since_exclusive: str | None, until: str, *, limit: int = 50) -> list[DryCommit]:
        """Commits reachable from ``until`` but not from ``since_exclusive``, newest first.

        Cached when both ends are SHAs: history below a commit never changes.
        """
        key = (since_exclusive, until, limit)
        immutable = _is_sha(until) and (since_exclusive is None or _is_sha(since_exclusive))
        revs = [until] if since_exclusive is None else [until, f"^{since_exclusive}"]
        with self._lock:
            cached = self._logs.get(key) if immutable else None
            if cached is not None:
                return list(cached)
            args = ["log", f"--format={_LOG_FORMAT}", f"-n{limit}", "--end-of-options"]
            _, out, _ = self._run([*args, *revs, "--"])
            commits = self._parse_log(out)
            if immutable:
                _remember(self._logs, key, tuple(commits), 1024)
        return commits

    @staticmethod
    def _parse_log(out: str) -> list[DryCommit]:
        commits = []
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) == 4:
                sha, subject, author, date = fields
                when = datetime.fromisoformat(date) if date else None
                commits.append(DryCommit(sha=sha, subject=subject, author=author, date=when))
        return commits

    # -- writes -------------------------------------------------------------------------

    def push(self, refspecs: list[str], *, leases: Mapping[str, str | None]) -> None:
        """Push ``refspecs`` atomically, each lease a ``--force-with-lease`` (None: must not exist).

        ``PushRejected`` when the remote refuses (a stale lease, a non-fast-forward).
        """
        args = ["push", "--atomic", "--porcelain"]
        args += [f"--force-with-lease={ref}:{old or ''}" for ref, old in leases.items()]
        with self._lock:
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

    def commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        """A new commit object (no ref moves) with a fallback identity if none is set."""
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
        with self._lock:
            return self._run(args, commit=True)[1].strip()

    def update_ref(self, ref: str, new: str, old: str | None) -> None:
        """Compare-and-swap ``ref`` from ``old`` (None: must not exist) to ``new``."""
        if not ref.startswith("refs/"):
            raise ValueError(f"a full ref name is needed, not {ref!r}")
        with self._lock:
            self._refs = None
            self._run(["update-ref", "-m", "promoter", ref, new, old or _ZERO])

    def write_blob(self, data: bytes) -> str:
        """Store ``data`` as a blob in the mirror; its SHA (for notes on synthetic keys)."""
        with self._lock:
            return self._run(["hash-object", "-w", "--stdin"], stdin=data)[1].strip()

    def commit_time(self, sha: str) -> datetime | None:
        """When ``sha`` was committed (its committer date), or None for an unknown commit."""
        with self._lock:
            data = self._data(sha)
        if data is None:
            return None
        for line in data.split(b"\n\n", 1)[0].splitlines():
            if line.startswith(b"committer "):
                # committer NAME <EMAIL> SECONDS +ZONE
                return datetime.fromtimestamp(int(line.split(b" ")[-2]), tz=UTC)
        return None

    def write_note(self, ref: str, sha: str, text: str) -> None:
        """Set the note on ``sha`` under ``ref`` to exactly ``text`` (local: push it after)."""
        with self._lock:
            blob = self._run(["hash-object", "-w", "--stdin"], stdin=text.encode())[1].strip()
            self._refs = None
            self._run(
                ["notes", f"--ref={_notes_ref(ref)}", "add", "-f", "-C", blob, sha], commit=True
            )

    def write_notes(
        self, ref: str, notes: Mapping[str, str], *, message: str, blobs: Iterable[bytes] = ()
    ) -> str:
        """Set many notes under ``ref`` in one commit, in one ``git fast-import``; the new tip.

        ``notes`` maps an object SHA (any object: a commit, or a synthetic key blob) to
        the note's exact text; ``blobs`` are stored too (the key blobs notes hang on).
        A note keeps the path (fan-out) it already has; a new one goes where git's
        notes reader looks first. The ref moves only as a fast-forward of its tip when
        this was called (``GitError`` otherwise); local until pushed, like
        ``write_note``. One process whatever the number of notes, where ``write_note``
        costs two per note.
        """
        name = _notes_ref(ref)
        with self._lock:
            tip = self._cached_refs().get(name)
            root = self.tree_sha(tip) if tip else None
            if self._committer is None:  # "Name <email>", as git would commit now
                ident = self._run(["var", "GIT_COMMITTER_IDENT"], commit=True)[1].strip()
                self._committer = ident.rsplit(" ", 2)[0]
            parts = [_fast_import_data(b"blob", data) for data in blobs]
            head = f"commit {name}\ncommitter {self._committer} {int(time.time())} +0000"
            parts.append(_fast_import_data(head.encode(), message.encode()))
            if tip:
                parts.append(f"from {tip}\n".encode())
            for target, text in sorted(notes.items()):
                path = _note_path(root, target.lower(), self._read_tree)
                parts.append(_fast_import_data(f"M 100644 inline {path}".encode(), text.encode()))
            parts.append(b"\ndone\n")
            self._refs = None
            self._run(["fast-import", "--quiet", "--done"], stdin=b"".join(parts), commit=True)
            new = self._cached_refs().get(name)
            if new is None or new == tip:
                raise GitError(f"fast-import did not move {name} in mirror {self.name}")
            return new

    def read_note(self, ref: str, sha: str) -> str | None:
        """The note on ``sha`` under ``ref`` (``refs/notes/x`` or ``x``), or None."""
        with self._lock:
            notes = self._cached_refs().get(_notes_ref(ref))
            blob = find_note(self.tree_sha(notes), sha, self._read_tree) if notes else None
            data = self._data(blob) if blob else None
            return None if data is None else data.decode()
