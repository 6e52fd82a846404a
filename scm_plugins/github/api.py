"""Authenticated calls on one repository: ``/repos/{owner}/{name}...`` with its token, and
GraphQL queries about it.

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
from scm_plugins.github.limits import GRAPHQL_PATH


class RepoApi:
    def __init__(self, *, client: GitHubClient, credentials: Credentials, renewable: bool) -> None:
        self.client = client
        self.credentials = credentials
        self._renewable = renewable

    def graphql(
        self,
        repo: Repository,
        operation: str,
        query: str,
        variables: Mapping[str, Any],
        *,
        priority: Priority | None = None,
        **fields: object,
    ) -> Any:
        """One GraphQL request with ``repo``'s token; GitHub's whole answer (``data`` and
        any ``errors``, which GitHub gives with a 200)."""
        return self._send(
            "bearer",
            repo,
            operation,
            "POST",
            GRAPHQL_PATH,
            body={"query": query, "variables": dict(variables)},
            priority=priority,
            url=self.client.graphql_url,
            **fields,
        )

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
        return self._send(
            "token",
            repo,
            operation,
            method,
            f"/repos/{repo.full_path}{path}",
            params=params,
            body=body,
            conditional=conditional,
            keep=keep,
            priority=priority,
            **fields,
        )

    def _send(
        self,
        scheme: str,
        repo: Repository,
        operation: str,
        method: str,
        path: str,
        /,
        **options: Any,
    ) -> Any:
        """One call with ``repo``'s token in the ``scheme`` GitHub takes there."""
        for attempt in (1, 2):
            token = self.credentials.token(repo=repo)
            try:
                return self.client.request(
                    operation,
                    method,
                    path,
                    authorization=f"{scheme} {token}",
                    budgeted=True,
                    repo=repo.full_path,
                    **options,
                )
            except ScmAuthError as exc:
                cause = exc.__cause__
                refused = isinstance(cause, GitHubHTTPError) and cause.status == 401
                if not (refused and self._renewable and attempt == 1):
                    raise
                self.credentials.invalidate(repo=repo)
        raise AssertionError("unreachable")  # pragma: no cover
