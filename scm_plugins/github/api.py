"""Authenticated calls on one repository: ``/repos/{owner}/{name}...`` with its token.

A 401 on an App installation token forgets that token and tries once more with a
fresh one (a token can be revoked before it expires); any other error goes up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from promoter.config import Repository
from promoter.errors import ScmAuthError
from scm_plugins.budget import Priority
from scm_plugins.github.auth import Credentials
from scm_plugins.github.client import GitHubClient
from scm_plugins.github.errors import GitHubHTTPError


class RepoApi:
    def __init__(self, *, client: GitHubClient, credentials: Credentials, renewable: bool) -> None:
        self.client = client
        self.credentials = credentials
        self._renewable = renewable

    def call(
        self,
        repo: Repository,
        operation: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        conditional: bool = False,
        keep: Callable[[Any], Any] | None = None,
        priority: Priority | None = None,
        **fields: object,
    ) -> Any:
        """One call on ``/repos/{repo}{path}``; the parsed JSON answer (``keep``: see
        ``GitHubClient.request``)."""
        for attempt in (1, 2):
            token = self.credentials.token(repo=repo)
            try:
                return self.client.request(
                    operation,
                    method,
                    f"/repos/{repo.full_path}{path}",
                    authorization=f"token {token}",
                    params=params,
                    body=body,
                    conditional=conditional,
                    keep=keep,
                    priority=priority,
                    budgeted=True,
                    repo=repo.full_path,
                    **fields,
                )
            except ScmAuthError as exc:
                cause = exc.__cause__
                refused = isinstance(cause, GitHubHTTPError) and cause.status == 401
                if not (refused and self._renewable and attempt == 1):
                    raise
                self.credentials.invalidate(repo=repo)
        raise AssertionError("unreachable")  # pragma: no cover
