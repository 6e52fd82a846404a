"""The plugin protocol's pull-request methods, as both Bitbucket plugins carry them out:
each handed to the product's own pull requests (``PullRequests``), which know its REST
API; a pull request is closed by a comment, then a decline."""

from __future__ import annotations

from typing import Protocol

from promoter.config import Repository
from promoter.models import PullRequest


class PullRequests(Protocol):
    """What a Bitbucket product's pull requests do (``bitbucket_cloud.pulls.Pulls``,
    ``bitbucket_datacenter.pulls.Pulls``)."""

    def find_open(self, repo: Repository, *, head: str, base: str) -> PullRequest | None: ...

    def open(
        self, repo: Repository, *, head: str, base: str, title: str, body: str
    ) -> PullRequest: ...

    def update(self, repo: Repository, *, number: int, title: str, body: str) -> PullRequest: ...

    def merge(
        self, repo: Repository, *, number: int, expected_head_sha: str, message: str
    ) -> str: ...

    def decline(self, repo: Repository, *, number: int) -> None: ...

    def comment(self, repo: Repository, *, number: int, body: str) -> None: ...


class PullRequestMethods:
    """The protocol's pull-request methods over ``self._pulls``."""

    _pulls: PullRequests

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self._pulls.find_open(repo, head=head, base=base)

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
        return self._pulls.open(repo, head=head, base=base, title=title, body=body)

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        return self._pulls.update(repo, number=number, title=title, body=body)

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        return self._pulls.merge(
            repo, number=number, expected_head_sha=expected_head_sha, message=message
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        """Comment first, then decline: a crash in between repeats the comment, never
        loses it."""
        if comment:
            self._pulls.comment(repo, number=number, body=comment)
        self._pulls.decline(repo, number=number)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._pulls.comment(repo, number=number, body=body)
