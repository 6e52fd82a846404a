"""Build statuses on Bitbucket Data Center, read as gates and written as the promoter's checks.

Two APIs hold them. Since 7.4 a build status belongs to a repository's commit:
``/rest/api/latest/projects/{KEY}/repos/{slug}/commits/{sha}/builds`` (POST one, GET a
page of them). Older servers have only ``/rest/build-status/1.0/commits/{sha}``, across
repositories. ``buildStatusApi: auto`` uses the first and, the first time a server answers
404 there while the older API answers, the older one from then on (a repository that does
not exist answers 404 on both). A status is written with the key of the promoter's gate;
Data Center keeps one per key and commit, the latest.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any, Literal

from promoter.config import Repository
from promoter.errors import ScmError, ScmNotFound
from promoter.models import CommitStatus
from scm_plugins.bitbucket import STATES, BitbucketApi
from scm_plugins.bitbucket.states import MAX_DESCRIPTION, MAX_NAME
from scm_plugins.bitbucket_datacenter import convert
from scm_plugins.bitbucket_datacenter.pulls import repo_path
from scm_plugins.budget import Priority

PAGE = 100
MAX_PAGES = 10
LEGACY = "/rest/build-status/1.0/commits"


class Statuses:
    """The build-status half of the Data Center plugin."""

    def __init__(
        self, api: BitbucketApi, *, mode: Literal["auto", "commits", "legacy"], web_url: str
    ) -> None:
        self._api = api
        self._mode = mode
        self._web = web_url.rstrip("/")
        self._lock = threading.Lock()

    def _paths(self, repo: Repository, sha: str) -> list[tuple[str, str]]:
        """``(api, path)`` to try in order: the current API, then (auto) the older one."""
        with self._lock:
            mode = self._mode
        current = ("commits", f"{repo_path(repo)}/commits/{sha}/builds")
        legacy = ("legacy", f"{LEGACY}/{sha}")
        if mode == "commits":
            return [current]
        if mode == "legacy":
            return [legacy]
        return [current, legacy]

    def _settle(self, api: str) -> None:
        with self._lock:
            if self._mode == "auto" and api == "legacy":
                self._mode = "legacy"

    def get(
        self, repo: Repository, *, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        priority = Priority.PRE_MERGE_READ if keys is not None else None
        paths = self._paths(repo, sha)
        for i, (api, path) in enumerate(paths):
            try:
                items = self._pages(path, sha, priority)
            except ScmNotFound:
                if i + 1 == len(paths):
                    raise
                continue
            self._settle(api)
            return convert.latest_statuses(items)
        raise AssertionError("unreachable")  # pragma: no cover

    def _pages(self, path: str, sha: str, priority: Priority | None) -> list[Any]:
        items: list[Any] = []
        start = 0
        for page_number in range(1, MAX_PAGES + 1):
            page = self._api.call(
                "list_commit_statuses",
                "GET",
                path,
                params={"limit": PAGE, "start": start},
                priority=priority,
                sha=sha,
                page=page_number,
            )
            values = page.get("values") if isinstance(page, dict) else None
            if not isinstance(values, list):
                raise ScmError("Bitbucket Data Center's build statuses are not a page of them")
            items.extend(values)
            if page.get("isLastPage", True) or page.get("nextPageStart") is None:
                break
            start = int(page["nextPageStart"])
        return items

    def set(self, repo: Repository, *, sha: str, status: CommitStatus) -> None:
        """One of the promoter's checks, shown on the commit and its pull requests. Data
        Center needs a URL: without one, the commit's own page."""
        body = {
            "key": status.key,
            "state": STATES[status.phase],
            "name": status.key[:MAX_NAME],
            "description": status.description[:MAX_DESCRIPTION],
            "url": status.url
            or f"{self._web}{repo_path(repo).removeprefix('/rest/api/latest')}/commits/{sha}",
        }
        paths = self._paths(repo, sha)
        for i, (api, path) in enumerate(paths):
            try:
                self._api.call(
                    "set_commit_status", "POST", path, body=body, sha=sha, key=status.key
                )
            except ScmNotFound:
                if i + 1 == len(paths):
                    raise
                continue
            self._settle(api)
            return
