"""The embedded SCM: pull requests and statuses in SQLite, merges as real git merges.

The repository is a local path (bare or not). A merge is a three-way merge, refused
when it conflicts, made by the provider's ``mergeMethod`` (``scm_plugins.local.merging``)
and moved onto the base branch with ``git update-ref NEW OLD`` (compare-and-swap), so a
merge whose head or base moved meanwhile is refused, never half-done. The merge is
written on its PR before the base branch moves: a process killed in between has its PR
recorded merged, with the head it merged, the next time the PR is read. Every call is
counted through ``ScmCalls`` like a remote SCM's.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

from promoter.config import Repository, ScmProvider
from promoter.errors import (
    GitError,
    ScmBusy,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmUnavailable,
)
from promoter.git.ancestry import walk_ancestry
from promoter.git.caches import remember
from promoter.git.identity import identity_env
from promoter.git.process.credentials import noninteractive_env
from promoter.git.process.runner import run_git
from promoter.git.process.stale_lock import abandoned_in
from promoter.models import SHA_RE, CommitStatus, PullRequest, PullRequestState, Review
from scm_plugins.calls import ScmCalls
from scm_plugins.local import merging
from scm_plugins.local.queue import LocalQueue
from scm_plugins.local.refs import BranchTips
from scm_plugins.local.store import LocalStore

AUTHOR = "promoter"
"""Who opens every pull request of the local SCM: the promoter; its approvals never count."""
LOCK_MARGIN = 0.5
"""Seconds past the moment a lock is taken as abandoned before the merge is tried again."""


ANCESTRY_KEPT = 4096
"""Answers "is this commit an ancestor of that one" kept at most (then started over)."""


def repository_path(repo: Repository) -> Path:
    """The local path behind a repository URL (a path or a file:// URL)."""
    url = repo.url.removeprefix("file://")
    return Path(url).expanduser()


def _translate(exc: BaseException) -> ScmError | None:
    if isinstance(exc, subprocess.CalledProcessError | GitError | OSError):
        return ScmUnavailable(f"local git failed: {exc}")
    if isinstance(exc, sqlite3.OperationalError):
        return ScmUnavailable(f"local SCM database busy: {exc}")
    return None


class LocalScm(LocalQueue):
    """The ``local`` SCM plugin (its merge queue in ``LocalQueue``)."""

    name = "local"
    folded_gate_keys: frozenset[str] = frozenset()

    @staticmethod
    def preflight(
        *, provider: ScmProvider, repositories: Iterable[Repository]
    ) -> Iterator[tuple[str | None, str]]:
        """Each repository is a local git repository (``registry.preflight``)."""
        for repo in repositories:
            path = repository_path(repo).absolute()
            if not path.is_dir():
                yield repo.name, f"no repository at {path}: the directory does not exist"
            elif not ((path / "HEAD").is_file() or (path / ".git").exists()):
                yield repo.name, f"{path} is not a git repository"

    def __init__(self, *, provider: ScmProvider, state_dir: str) -> None:
        self.provider = provider
        self.store = LocalStore(Path(state_dir) / "local-scm.sqlite3")
        self._calls = ScmCalls("local", _translate)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._readers: dict[str, BranchTips] = {}
        self._ancestry: dict[tuple[str, str, str], bool] = {}
        self._env = {**os.environ, **identity_env(), **noninteractive_env()}
        local = provider.local
        self._merge_method: merging.MergeMethod = local.merge_method if local else "merge"
        self._queue_settings = local.merge_queue if local else None

    # --- git -------------------------------------------------------------------------

    def _git(self, repo: Repository, *args: str) -> str:
        path = repository_path(repo)
        if not path.exists():
            raise ScmNotFound(f"repository {repo.name} not found at {path}")
        status, out, err = run_git(args, cwd=path, base_env=self._env, ok=range(256))
        if status != 0:
            raise subprocess.CalledProcessError(status, args[0], stderr=err)
        return out.strip()

    def _local_git(self, repo: Repository) -> merging.LocalGit:
        return merging.LocalGit(repository_path(repo), self._env)

    def _tip(self, repo: Repository, branch: str) -> str | None:
        return self._tips(repo, branch).get(branch)

    def _tips(self, repo: Repository, *branches: str) -> dict[str, str]:
        """``branch -> tip`` for those of ``branches`` that exist, read by the repository's
        persistent ``cat-file`` (``BranchTips``)."""
        reader = self._reader(repo)
        try:
            return reader.tips(branches)
        except FileNotFoundError as exc:
            raise ScmNotFound(f"repository {repo.name} not found at {reader.path}") from exc

    def _reader(self, repo: Repository) -> BranchTips:
        path = repository_path(repo)
        with self._locks_guard:
            reader = old = self._readers.get(repo.name)
            if reader is None or reader.path != path:
                reader = self._readers[repo.name] = BranchTips(path, self._env)
        if old is not None and old is not reader:  # the repository's URL changed (a reload)
            old.close()
        return reader

    def _is_ancestor(self, repo: Repository, ancestor: str, descendant: str) -> bool:
        """Walked through the persistent reader near the tip (most questions: a PR's head
        a commit or two from its base), else asked of ``git merge-base``. An answer about
        two commits is kept: it never changes."""
        exact = bool(SHA_RE.fullmatch(ancestor) and SHA_RE.fullmatch(descendant))
        key = (repo.url, ancestor, descendant)
        if exact:  # compared as text: only full SHAs
            known = self._ancestry.get(key)
            if known is not None:
                return known
            try:
                walked = walk_ancestry(self._reader(repo).parents, ancestor, descendant)
            except (OSError, GitError):
                walked = None
            if walked is not None:
                return remember(self._ancestry, key, walked, ANCESTRY_KEPT)
        try:
            self._git(repo, "merge-base", "--is-ancestor", ancestor, descendant)
        except subprocess.CalledProcessError as exc:
            if exact and exc.returncode == 1:  # an answer, not an unknown commit (128)
                remember(self._ancestry, key, False, ANCESTRY_KEPT)
            return False
        return remember(self._ancestry, key, True, ANCESTRY_KEPT) if exact else True

    def _lock(self, repo: Repository) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(repo.name, threading.Lock())

    # --- pull requests ---------------------------------------------------------------

    def _model(
        self, repo: Repository, row: sqlite3.Row, tips: dict[str, str] | None = None
    ) -> PullRequest:
        """The PR of ``row``; an open one's head is its branch tip (from ``tips`` if read)."""
        state = PullRequestState(row["state"])
        head_sha = row["head_sha"] or ""
        if state is PullRequestState.OPEN:
            tip = tips.get(row["head"], "") if tips is not None else self._tip(repo, row["head"])
            head_sha = tip or head_sha
        return PullRequest(
            id=str(row["id"]),
            number=row["id"],
            head_branch=row["head"],
            base_branch=row["base"],
            head_sha=head_sha,
            state=state,
            title=row["title"],
            body=row["body"],
            labels=tuple(json.loads(row["labels"])),
            url=f"local://{repo.name}/pulls/{row['id']}",
            merge_sha=row["merge_sha"],
            author=AUTHOR,
        )

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        with self._calls.call("find_pull_request", repository=repo.name, head=head, base=base):
            row = self.store.find_open(repo.name, head, base)
            if row is None:
                return None
            tips = self._tips(repo, head, base)
            if self._settled(repo, row, tips.get(base, "")):
                return None
            pr = self._model(repo, row, tips)
            base_tip = tips.get(base, "")
            if pr.head_sha and base_tip and self._is_ancestor(repo, pr.head_sha, base_tip):
                # Merged by hand: recorded merged, without the merge's SHA (not known).
                self.store.update(repo.name, pr.number, state="merged", head_sha=pr.head_sha)
                return None
            return pr

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        with self._calls.call("open_pull_request", repository=repo.name, head=head, base=base):
            tips = self._tips(repo, head, base)
            for branch in (head, base):
                if branch not in tips:
                    raise ScmNotFound(f"branch {branch} does not exist in {repo.name}")
            row = self.store.create(repo.name, head, base, title, body, labels)
            return self._model(repo, row, tips)

    def _open_row(self, repo: Repository, number: int) -> sqlite3.Row:
        row = self.store.get(repo.name, number)
        if row is None:
            raise ScmNotFound(f"pull request {number} not found in {repo.name}")
        if self._settled(repo, row):
            raise ScmConflict(f"pull request {number} is merged")
        if row["state"] != "open":
            raise ScmConflict(f"pull request {number} is {row['state']}")
        return row

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        with self._calls.call("update_pull_request", repository=repo.name, pr=number):
            self._open_row(repo, number)
            self.store.update(repo.name, number, title=title, body=body, labels=labels)
            row = self.store.get(repo.name, number)
            assert row is not None
            return self._model(repo, row)

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        with (
            self._calls.call("merge_pull_request", repository=repo.name, pr=number),
            self._lock(repo),
        ):
            row = self._open_row(repo, number)
            tips = self._tips(repo, row["head"], row["base"])
            head_tip = tips.get(row["head"])
            if head_tip is None or head_tip != expected_head_sha:
                raise ScmConflict(
                    f"head of pull request {number} moved: expected "
                    f"{expected_head_sha[:7]}, found {(head_tip or 'nothing')[:7]}"
                )
            if row["base"] not in tips:
                raise ScmNotFound(f"base branch {row['base']} is gone")
            base_tip = tips[row["base"]]
            merge_sha = merging.merge(
                self._local_git(repo),
                method=self._merge_method,
                base=base_tip,
                head=head_tip,
                message=message,
                number=number,
            )
            self.store.update(repo.name, number, merging_head=head_tip, merging_sha=merge_sha)
            try:
                self._git(repo, "update-ref", f"refs/heads/{row['base']}", merge_sha, base_tip)
            except subprocess.CalledProcessError as exc:
                self.store.update(repo.name, number, merging_head=None, merging_sha=None)
                stderr = exc.stderr or ""
                if "but expected" in stderr:
                    raise ScmConflict(f"base branch {row['base']} moved during the merge") from exc
                wait = abandoned_in(stderr)
                if wait is not None:
                    raise ScmBusy(
                        f"cannot update {row['base']}: it is locked (a git killed while it"
                        f" held the lock leaves it; taken as abandoned in {wait:.0f} s)",
                        delay=wait + LOCK_MARGIN,
                    ) from exc
                reason = stderr.strip().splitlines()[-1] if stderr.strip() else "git failed"
                raise ScmUnavailable(f"cannot update {row['base']}: {reason}") from exc
            self._record_merge(repo, number, head_sha=head_tip, merge_sha=merge_sha)
            return merge_sha

    def _record_merge(
        self, repo: Repository, number: int, *, head_sha: str, merge_sha: str
    ) -> None:
        self.store.update(
            repo.name,
            number,
            state="merged",
            head_sha=head_sha,
            merge_sha=merge_sha,
            merging_head=None,
            merging_sha=None,
        )

    def _settled(self, repo: Repository, row: sqlite3.Row, base_tip: str | None = None) -> bool:
        """Whether open PR ``row`` turns out merged by a merge begun before the process
        died, after its base branch moved and before the PR was recorded merged; it is
        recorded now, with the head it merged, whatever its head branch holds since.
        A merge that never reached the base branch is left to the next attempt."""
        merge_sha, head_sha = row["merging_sha"], row["merging_head"]
        if row["state"] != "open" or not merge_sha:
            return False
        tip = base_tip if base_tip is not None else self._tip(repo, row["base"])
        if not tip or not self._is_ancestor(repo, merge_sha, tip):
            return False
        self._record_merge(repo, row["id"], head_sha=head_sha, merge_sha=merge_sha)
        return True

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        with self._calls.call("close_pull_request", repository=repo.name, pr=number):
            row = self._open_row(repo, number)
            if comment:
                self.store.add_comment(number, comment)
            self.store.update(
                repo.name, number, state="closed", head_sha=self._tip(repo, row["head"])
            )

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        with self._calls.call("comment_pull_request", repository=repo.name, pr=number):
            if self.store.get(repo.name, number) is None:
                raise ScmNotFound(f"pull request {number} not found in {repo.name}")
            self.store.add_comment(number, body)

    def approve_pull_request(self, *, repo: Repository, number: int, user: str) -> None:
        """Approve open PR ``number`` as ``user``, on its current head."""

        with self._calls.call("approve_pull_request", repository=repo.name, pr=number):
            row = self._open_row(repo, number)
            self.store.add_review(repo.name, number, user, self._tip(repo, row["head"]) or "")

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """The approvals given with ``promoter approve`` (the local SCM has no teams)."""

        with self._calls.call("get_reviews", repository=repo.name, pr=number):
            rows = self.store.reviews(repo.name, number)
        return [Review(user=r["user"], approved=True, commit_sha=r["commit_sha"]) for r in rows]

    def pull_requests(self, *, repo: Repository) -> list[PullRequest]:
        """Every PR of the repository, oldest first (for status pages and tests)."""
        rows = self.store.all_prs(repo.name)
        if any([self._settled(repo, row) for row in rows]):  # every one, not the first
            rows = self.store.all_prs(repo.name)
        return [self._model(repo, row) for row in rows]

    # --- statuses and credentials ----------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        with self._calls.call("get_commit_statuses", repository=repo.name, sha=sha):
            return self.store.statuses(repo.name, sha)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        with self._calls.call("set_commit_status", repository=repo.name, sha=sha, key=status.key):
            self.store.set_status(repo.name, sha, status)
        self._status_landed(repo, sha)

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        return {}

    def close(self) -> None:
        with self._locks_guard:
            readers = list(self._readers.values())
            self._readers.clear()
        for reader in readers:
            reader.close()
        self.store.close()
