"""Full commit SHAs for Bitbucket Cloud's 12-character ones, and a branch's tip from git.

Cloud names a pull request's head and merge commit by 12 characters; the promoter needs
the whole SHA. A branch's tip is read with ``git ls-remote`` on the repository, with the
plugin's git credentials: the source of truth for a branch, and no REST call (Bitbucket's
REST budget counts REST requests; git's reads are counted in
``promoter_git_ls_remote_total``). Full SHAs the plugin learns (from git, from the
promoter's own calls) are remembered by their first 12 characters, so that most
pull requests are resolved without asking git.

Concurrency: the memory has its own lock; ``ls-remote`` runs in the calling thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

from promoter.config import Repository
from promoter.errors import GitError, ScmAuthError, ScmUnavailable
from promoter.git import run_git
from promoter.metrics import GIT_LS_REMOTE_TOTAL
from scm_plugins.bitbucket import same_commit

REMEMBERED = 20_000
"""Full SHAs kept by their first 12 characters (about 120 bytes each)."""
TIMEOUT = 30.0


class Tips:
    """Branch tips from git, and full SHAs for short ones. Thread-safe."""

    def __init__(self, git_env: Callable[[Repository], Mapping[str, str]]) -> None:
        self._git_env = git_env
        self._known: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def learn(self, sha: str) -> None:
        """Remember a full SHA the plugin was given or read."""
        if len(sha) < 40:
            return
        with self._lock:
            self._known[sha[:12].lower()] = sha.lower()
            self._known.move_to_end(sha[:12].lower())
            while len(self._known) > REMEMBERED:
                self._known.popitem(last=False)

    def known(self, short: str) -> str | None:
        if len(short) >= 40:
            return short.lower()
        with self._lock:
            found = self._known.get(short[:12].lower())
        return found if found is not None and same_commit(short, found) else None

    def tip(self, repo: Repository, branch: str) -> str | None:
        """The branch's tip now (``git ls-remote``), or None when there is no such branch."""
        ref = f"refs/heads/{branch}"
        GIT_LS_REMOTE_TOTAL.labels(repo.name).inc()
        try:
            _, out, _ = run_git(
                ["ls-remote", repo.url, ref],
                env=self._git_env(repo),
                timeout=TIMEOUT,
                what=f"of {branch}",
            )
        except GitError as exc:
            if "refused the git credentials" in str(exc):
                raise ScmAuthError(str(exc)) from exc
            raise ScmUnavailable(str(exc)) from exc
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name == ref:
                self.learn(sha)
                return sha.lower()
        return None

    def resolve(self, repo: Repository, short: str, branch: str) -> str:
        """The full SHA of ``short``, the tip of ``branch`` (or was); ``short`` itself when
        the branch moved on meanwhile (the promoter then reads the pull request again)."""
        found = self.known(short)
        if found is not None:
            return found
        tip = self.tip(repo, branch)
        return tip if tip is not None and same_commit(short, tip) else short
