"""The ``ScmPlugin`` methods as protocol calls: one JSON-RPC method each, writes noted.

``PluginMethods`` builds each call's parameters and hands it to ``_call`` (the host's: a
time limit, counted, the plugin's health); a write also names what its echo will say
(``echoes.Write``) and what its answer teaches about it, so that the event reporting it
back costs nothing (``_write``). Git credentials are reused until shortly before they
expire (``credentials``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import Any

from promoter.config import Repository
from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState, Review
from scm_plugins.external import messages as m
from scm_plugins.external.credentials import CredentialCache
from scm_plugins.external.echoes import Write

Learn = Callable[[Any], dict[str, Any]]
"""What a write's answer says of it: ``OwnWrites.answered``'s keywords."""


def _pull(answer: Any) -> dict[str, Any]:
    assert isinstance(answer, PullRequest)
    return {"number": answer.number, "head_sha": answer.head_sha}


def _merged(answer: Any) -> dict[str, Any]:
    assert isinstance(answer, m.MergeResult)
    return {"merge_sha": answer.merge_sha}


def _nothing(answer: Any) -> dict[str, Any]:
    return {}


class PluginMethods(ABC):
    """``ScmPlugin`` over ``_call``; the host provides it and ``_write``."""

    _credentials: CredentialCache

    @abstractmethod
    def _call(self, operation: str, method: str, params: m.Message, **fields: object) -> Any:
        """One call: its validated result."""

    @abstractmethod
    def _write(
        self,
        write: Write,
        learn: Learn,
        operation: str,
        method: str,
        params: m.Message,
        **fields: object,
    ) -> Any:
        """One call that changes something, noted as ``write`` while it runs."""

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        params = m.FindOpenParams(repository=m.RepositoryRef.of(repo), head=head, base=base)
        found: PullRequest | None = self._call(
            "find_pull_request", "pullRequests/findOpen", params, repository=repo.name, head=head
        )
        return found

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
        params = m.OpenParams(
            repository=m.RepositoryRef.of(repo),
            head=head,
            base=base,
            title=title,
            body=body,
            labels=list(labels),
        )
        write = Write(repo.name, head=head, base=base, state=PullRequestState.OPEN)
        pr: PullRequest = self._write(
            write,
            _pull,
            "open_pull_request",
            "pullRequests/open",
            params,
            repository=repo.name,
            head=head,
        )
        return pr

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        params = m.UpdateParams(
            repository=m.RepositoryRef.of(repo),
            number=number,
            title=title,
            body=body,
            labels=list(labels),
        )
        write = Write(repo.name, number=number, state=PullRequestState.OPEN)
        pr: PullRequest = self._write(
            write,
            _pull,
            "update_pull_request",
            "pullRequests/update",
            params,
            repository=repo.name,
            pr=number,
        )
        return pr

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        params = m.MergeParams(
            repository=m.RepositoryRef.of(repo),
            number=number,
            expected_head_sha=expected_head_sha,
            message=message,
        )
        write = Write(
            repo.name, number=number, state=PullRequestState.MERGED, head_sha=expected_head_sha
        )
        merged: m.MergeResult = self._write(
            write,
            _merged,
            "merge_pull_request",
            "pullRequests/merge",
            params,
            repository=repo.name,
            pr=number,
        )
        return merged.merge_sha

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        params = m.CloseParams(repository=m.RepositoryRef.of(repo), number=number, comment=comment)
        write = Write(repo.name, number=number, state=PullRequestState.CLOSED)
        self._write(
            write,
            _nothing,
            "close_pull_request",
            "pullRequests/close",
            params,
            repository=repo.name,
            pr=number,
        )

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        params = m.CommentParams(repository=m.RepositoryRef.of(repo), number=number, body=body)
        self._call(
            "comment_pull_request", "pullRequests/comment", params, repository=repo.name, pr=number
        )

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        params = m.ReviewsParams(repository=m.RepositoryRef.of(repo), number=number, teams=[*teams])
        found: list[Review] = self._call(
            "get_reviews", "pullRequests/reviews", params, repository=repo.name, pr=number
        )
        return found

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        params = m.GetStatusesParams(
            repository=m.RepositoryRef.of(repo), sha=sha, keys=None if keys is None else list(keys)
        )
        found: list[CommitStatus] = self._call(
            "get_commit_statuses", "commitStatuses/get", params, repository=repo.name, sha=sha
        )
        return found

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        params = m.SetStatusParams(repository=m.RepositoryRef.of(repo), sha=sha, status=status)
        phase: Phase = status.phase
        write = Write(repo.name, sha=sha, key=status.key, phase=phase)
        self._write(
            write,
            _nothing,
            "set_commit_status",
            "commitStatuses/set",
            params,
            repository=repo.name,
            sha=sha,
            key=status.key,
        )

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        """The plugin's answer, reused until shortly before it expires (``credentials``)."""
        cached = self._credentials.get(repo.name)
        if cached is not None:
            return cached
        params = m.GitEnvironmentParams(repository=m.RepositoryRef.of(repo))
        result: m.GitEnvironmentResult = self._call(
            "git_environment", "git/environment", params, repository=repo.name
        )
        self._credentials.put(repo.name, result.env, result.expires_at)
        return result.env
