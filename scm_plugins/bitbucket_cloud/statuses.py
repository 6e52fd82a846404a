"""Commit statuses on Bitbucket Cloud (build statuses), read as gates and written as the
promoter's checks.

``GET /2.0/repositories/{workspace}/{slug}/commit/{sha}/statuses`` lists a commit's statuses
(Bitbucket Pipelines' and every other CI's among them), one per key; ``POST .../statuses/build``
creates one or, for a key the commit has, replaces it. The promoter's checks show on the
pull request whose head the commit is. Cloud needs a URL: a status without one links to
the commit's page.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from promoter.config import Repository
from promoter.errors import ScmError
from promoter.models import CommitStatus
from scm_plugins.bitbucket import STATES, BitbucketApi
from scm_plugins.bitbucket.states import MAX_DESCRIPTION, MAX_NAME
from scm_plugins.bitbucket_cloud import convert
from scm_plugins.bitbucket_cloud.pulls import repo_path
from scm_plugins.budget import Priority

PAGE = 100
MAX_PAGES = 10


def web_url(api_url: str) -> str:
    """Where people see the repositories: ``https://bitbucket.org`` for the public API."""
    parts = urlsplit(api_url)
    host = parts.netloc.removeprefix("api.")
    return f"{parts.scheme}://{host}"


class Statuses:
    """The commit-status half of the Cloud plugin."""

    def __init__(self, api: BitbucketApi, *, web: str) -> None:
        self._api = api
        self._web = web.rstrip("/")

    def get(
        self, repo: Repository, *, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        priority = Priority.PRE_MERGE_READ if keys is not None else None
        items: list[Any] = []
        for page in range(1, MAX_PAGES + 1):
            answer = self._api.call(
                "list_commit_statuses",
                "GET",
                f"{repo_path(repo)}/commit/{sha}/statuses",
                params={"pagelen": PAGE, "page": page},
                priority=priority,
                sha=sha,
                page=page,
            )
            values = answer.get("values") if isinstance(answer, dict) else None
            if not isinstance(values, list):
                raise ScmError("Bitbucket Cloud's commit statuses are not a page of them")
            items.extend(values)
            if not answer.get("next"):
                break
        return convert.latest_statuses(items)

    def set(self, repo: Repository, *, sha: str, status: CommitStatus) -> None:
        full = "/".join(repo_path(repo).split("/")[-2:])
        self._api.call(
            "set_commit_status",
            "POST",
            f"{repo_path(repo)}/commit/{sha}/statuses/build",
            body={
                "key": status.key,
                "state": STATES[status.phase],
                "name": status.key[:MAX_NAME],
                "description": status.description[:MAX_DESCRIPTION],
                "url": status.url or f"{self._web}/{full}/commits/{sha}",
            },
            sha=sha,
            key=status.key,
        )
