"""A small hydrator for demos and tests: renders the dry branch onto each ``<branch>-next``.

It copies the dry tree (or one folder of it per environment) and adds a
``hydrator.metadata`` file and note, with plumbing only: no checkout, refs moved in one
``update-ref --stdin`` transaction. Like Argo CD's source hydrator, it makes no commit
when the rendered manifests did not change; it only moves the note to the new dry SHA.

``metadata`` picks what it writes: ``file`` (the file and the same JSON as the note),
``argocd`` (Argo CD's formats: the root file without empty fields, the note
``{"drySha": ...}``) or ``note`` (the note ``{"drySha": ...}`` and no file at all).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Literal
from urllib.parse import urlsplit

from promoter.config import short_name
from promoter.errors import GitError, PermanentError
from promoter.git.identity import identity_env
from promoter.git.metadata import METADATA_FILE, NOTES_REF, render_metadata
from promoter.git.process.credentials import strip_credentials
from promoter.git.process.runner import run_git

_ZERO = "0" * 40
MetadataStyle = Literal["file", "argocd", "note"]


class HydrateError(PermanentError):
    """The dry commit cannot be hydrated as asked (unknown ref, missing source folder)."""


@dataclass(frozen=True)
class HydrateResult:
    """What ``hydrate`` did for one environment branch."""

    branch: str
    """The active branch, e.g. ``environment/dev``."""
    proposed_branch: str
    """The branch the rendering went to, e.g. ``environment/dev-next``."""
    sha: str
    """The tip of the proposed branch afterwards."""
    dry_sha: str
    """The dry commit rendered."""
    noop: bool
    """No new commit: the manifests were unchanged, only the note moved."""
    created: bool = False
    """The active branch did not exist and was created at ``sha``."""


class _Plumbing:
    """git plumbing in one repository, with a fallback identity for commits and notes."""

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        if not repo.is_dir():
            raise HydrateError(f"no repository at {repo}: the directory does not exist")
        status, out, _ = run_git(["rev-parse", "--absolute-git-dir"], cwd=repo, ok=range(256))
        if status != 0:
            raise HydrateError(f"{repo} is not a git repository")
        git_dir = out.strip()
        self._env = identity_env(git_dir=Path(git_dir))

    def __call__(self, *args: str, stdin: str | None = None, ok: tuple[int, ...] = (0,)) -> str:
        return run_git(args, cwd=self._repo, env=self._env, stdin=stdin, ok=ok)[1]

    def records(self, tree: str) -> list[str]:
        """The entries of ``tree`` as ``ls-tree -z`` records, without the metadata file."""
        out = self("ls-tree", "-z", "--end-of-options", tree)
        return [r for r in out.split("\0") if r and r.split("\t", 1)[1] != METADATA_FILE]


def hydrate(
    *,
    repo: Path | str,
    dry_ref: str = "main",
    branches: list[str],
    suffix: str = "-next",
    source_dir: str | None = None,
    push_to: str | None = None,
    repo_url: str | None = None,
    metadata: MetadataStyle = "file",
) -> dict[str, HydrateResult]:
    """Render the dry commit ``dry_ref`` of ``repo`` onto ``<branch><suffix>`` for each branch.

    ``repo`` is a local repository, bare or not; nothing is checked out. The rendered
    tree is the dry commit's tree, or its folder ``source_dir`` with its placeholders
    filled in (``PLACEHOLDERS``: ``{env}`` is the last path component of the branch,
    ``environment/dev`` -> ``dev``; ``{branch}`` the whole branch),
    plus ``hydrator.metadata`` (``drySha``, ``repoURL``, ``author``, ``date``,
    ``subject``, ``body``) at the root; the same JSON is the note under
    ``refs/notes/hydrator.metadata``. ``repo_url`` defaults to ``remote.origin.url``,
    else the repository's path; credentials in it (``https://user:token@host/...``) are
    never written: every hydrated commit would keep them for ever.

    The new commit's parent is the proposed branch's tip, else the active branch's tip,
    else none; an active branch that does not exist yet is created at the proposed tip,
    so a fresh environment starts hydrated. When the tree without the metadata file
    equals the proposed tip's, no commit is made and only the note is (re)written.
    All branch refs move in one compare-and-swap transaction; ``push_to`` (a remote
    name or URL) then receives the touched branches and the notes ref, atomically.

    Branches and notes are read from ``repo``'s own ``refs/heads`` and notes ref: in a
    clone, fetch ``+refs/heads/*:refs/heads/*`` and ``refs/notes/*`` first, or the push
    will be refused as a non-fast-forward.

    Raises ``HydrateError`` for a missing repository, an unknown ``dry_ref``, an unknown
    placeholder or a missing source folder, and
    ``GitError`` when git fails (a ref moved meanwhile, the push was rejected).
    """
    git = _Plumbing(Path(repo))
    if repo_url is None:
        configured = git("config", "--get", "remote.origin.url", ok=(0, 1)).strip()
        repo_url = configured or str(Path(repo).absolute())
    repo_url = public_url(repo_url)
    results = _render(git, dry_ref, branches, suffix, source_dir, repo_url, metadata)
    if push_to is not None:
        refs = [f"refs/heads/{r.proposed_branch}" for r in results.values()]
        refs += [f"refs/heads/{r.branch}" for r in results.values() if r.created]
        git("push", "--atomic", "--quiet", push_to, *refs, f"{NOTES_REF}:{NOTES_REF}")
    return results


def public_url(url: str) -> str:
    """``url`` without user info when it is an http(s) URL (a token often hides there)."""
    if urlsplit(url).scheme.lower() in ("http", "https"):
        return strip_credentials(url)
    return url


def _render(
    git: _Plumbing,
    dry_ref: str,
    branches: list[str],
    suffix: str,
    source_dir: str | None,
    repo_url: str,
    style: MetadataStyle = "file",
) -> dict[str, HydrateResult]:
    bad = [b for b in branches if not b or any(c.isspace() for c in b + suffix)]
    if bad or not suffix:
        raise HydrateError(f"invalid branch names or suffix: {bad or [suffix]}")
    folders = {branch: source_folder(source_dir, branch) for branch in branches}
    try:
        dry = git("rev-parse", "--verify", "--end-of-options", f"{dry_ref}^{{commit}}").strip()
    except GitError:
        raise HydrateError(f"the dry ref {dry_ref!r} is not a commit") from None
    subject, metadata_records, blob = _metadata(git, dry, repo_url, style)
    tips = dict(
        line.split(" ", 1)[::-1]
        for line in git(
            "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"
        ).splitlines()
    )
    results: dict[str, HydrateResult] = {}
    transaction: list[str] = []
    for branch in dict.fromkeys(branches):
        proposed = f"{branch}{suffix}"
        records = git.records(_source_tree(git, dry, branch, folders[branch]))
        tip = tips.get(f"refs/heads/{proposed}")
        if tip is not None and git.records(f"{tip}^{{tree}}") == records:
            sha, noop = tip, True
        else:
            entries = [*records, *metadata_records]
            tree = git("mktree", "-z", stdin="".join(f"{r}\0" for r in entries))
            parent = tip or tips.get(f"refs/heads/{branch}")
            message = f"hydrate {dry[:12]}: {subject}\n\nRendered from {dry} for {branch}.\n"
            parents = ["-p", parent] if parent else []
            sha = git("commit-tree", tree.strip(), *parents, "-m", message).strip()
            transaction.append(f"update refs/heads/{proposed} {sha} {tip or _ZERO}")
            noop = False
        created = f"refs/heads/{branch}" not in tips
        if created:
            transaction.append(f"create refs/heads/{branch} {sha}")
        results[branch] = HydrateResult(branch, proposed, sha, dry, noop, created)
    if transaction:
        git("update-ref", "--stdin", stdin="".join(f"{line}\n" for line in transaction))
    for result in results.values():
        current = git("notes", f"--ref={NOTES_REF}", "list", result.sha, ok=(0, 1)).strip()
        if current != blob:
            git("notes", f"--ref={NOTES_REF}", "add", "-f", "-C", blob, result.sha)
    return results


def _metadata(
    git: _Plumbing, dry: str, repo_url: str, style: MetadataStyle
) -> tuple[str, list[str], str]:
    """The dry commit's subject, the tree records of its metadata file (none in ``note``
    style) and the blob of the hydrator note, written into the repository."""
    author, date, subject, body = git(
        "log", "-1", "--format=%an <%ae>%x00%aI%x00%s%x00%b", dry
    ).split("\0")
    text = render_metadata(
        dry_sha=dry,
        repo_url=repo_url,
        author=author,
        date=date,
        subject=subject,
        body=body.strip(),
    )
    if style == "argocd":  # Go's encoder: two-space indent, empty fields left out
        fields = {k: v for k, v in json.loads(text).items() if v}
        text = json.dumps(fields, indent=2, ensure_ascii=False) + "\n"
    file_blob = git("hash-object", "-w", "--stdin", stdin=text).strip()
    note = text if style == "file" else json.dumps({"drySha": dry}, separators=(",", ":"))
    blob = git("hash-object", "-w", "--stdin", stdin=note).strip()
    metadata_records = [] if style == "note" else [f"100644 blob {file_blob}\t{METADATA_FILE}"]
    return subject, metadata_records, blob


PLACEHOLDERS = {
    "env": "the branch's last part: environment/dev gives dev",
    "branch": "the whole branch: environment/dev",
}
"""What ``source_dir`` may name in braces, e.g. ``envs/{env}``."""


def source_folder(source_dir: str | None, branch: str) -> str | None:
    """``source_dir`` for ``branch``, its placeholders filled in; None for the whole tree."""
    if source_dir is None:
        return None
    try:
        names = [name for _, name, _, _ in Formatter().parse(source_dir) if name is not None]
    except ValueError:
        raise HydrateError(
            f"the source folder {source_dir!r} has a stray brace; write {{{{ or }}}} for a brace"
        ) from None
    for name in names:
        if name not in PLACEHOLDERS:
            known = ", ".join(f"{{{known}}}" for known in PLACEHOLDERS)
            raise HydrateError(
                f"unknown placeholder {{{name}}} in the source folder {source_dir!r}; use {known}"
            )
    values = {"env": short_name(branch), "branch": branch}
    return source_dir.format_map(values).strip("/")


def _source_tree(git: _Plumbing, dry: str, branch: str, folder: str | None) -> str:
    """The tree to render for ``branch``: the dry tree, or its environment's folder."""
    if folder is None or folder in ("", "."):
        return f"{dry}^{{tree}}"
    try:  # "<rev>:<path>^{tree}" would read "^{tree}" as part of the path
        tree = git("rev-parse", "--verify", "--end-of-options", f"{dry}:{folder}").strip()
        if git("cat-file", "-t", tree).strip() == "tree":
            return tree
    except GitError:
        pass
    raise HydrateError(f"source folder {folder!r} for {branch} does not exist in dry commit {dry}")
