"""A stand-in for a plugin that could not be built here (a secret missing on this machine).

``promoter status --config`` reads state without every secret: the strategies of such a
provider show why their SCM cannot be read, the others show as usual. Git still reaches
the repository without credentials (a public or local one).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NoReturn

from promoter.config import Repository
from promoter.errors import ScmUnavailable
from promoter.models import CommitStatus, PullRequest


class UnavailableScm:
    """Every SCM call raises ``ScmUnavailable`` with the reason the plugin was not built."""

    def __init__(self, *, provider: str, kind: str, reason: str) -> None:
        self.name = kind
        self.folded_gate_keys: frozenset[str] = frozenset()
        self._message = f"the {kind} provider {provider!r} is not available here: {reason}"

    def _refuse(self) -> NoReturn:
        raise ScmUnavailable(self._message)

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        self._refuse()

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
        self._refuse()

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        self._refuse()

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        self._refuse()

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._refuse()

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._refuse()

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        self._refuse()

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._refuse()

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        return {"GIT_TERMINAL_PROMPT": "0"}

    def close(self) -> None:
        """Nothing to release."""
