"""Promotion pull requests on Bitbucket Data Center: find, open (idempotent), update, merge,
decline, comment, and the reviews of the approval gate.

Data Center locks a pull request with its ``version``: an update, a merge or a decline
names the version it was decided on, and the server refuses it (409,
``PullRequestOutOfDateException``) when the pull request changed since, its head among
other things. The version of each pull request is remembered with the head it was read
at (from the open, a lookup, an update), so that a merge costs one call: sent with the
version read at the expected head, it is refused by the server if the head moved; a
version not remembered, or remembered at another head, is read first. A merge refused
as out of date is read once more: a moved head is refused for good (``ScmConflict``),
another change (a reviewer's) is merged at the new version.

Calls: find 1 (a page of 50), open 1 (a duplicate's 409 names the one open), update 1
(+1 when out of date), merge 1 (+1 when the version is unknown or old), decline 2
(comment, then decline), comment 1, reviews 1.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmError
from promoter.models import PullRequest, PullRequestState, Review
from scm_plugins.bitbucket import BitbucketApi, BitbucketHTTPError
from scm_plugins.bitbucket_datacenter import convert

PAGE = 50
REMEMBERED = 4096
"""Pull requests whose version is remembered (the open ones of every strategy, and more)."""


def repo_path(repo: Repository) -> str:
    """``/rest/api/latest/projects/{KEY}/repos/{slug}`` of ``path`` (``KEY/slug``) or of the
    clone URL's last two parts (``.../scm/key/slug.git``)."""
    parts = [p for p in repo.full_path.split("/") if p]
    if len(parts) < 2:
        raise ScmError(f"repository {repo.name}: path must be PROJECT/slug, not {repo.full_path}")
    project, slug = quote(parts[-2], safe="~"), quote(parts[-1], safe="")
    return f"/rest/api/latest/projects/{project}/repos/{slug}"


def _ref(branch: str) -> dict[str, str]:
    return {"id": f"refs/heads/{branch}"}


class Pulls:
    """The pull-request half of the Data Center plugin."""

    def __init__(self, api: BitbucketApi, *, strategy: str | None) -> None:
        self._api = api
        self._strategy = strategy
        self._versions: OrderedDict[tuple[str, int], tuple[int, str]] = OrderedDict()
        self._lock = threading.Lock()

    # --- what the plugin remembers -----------------------------------------------------

    def _seen(self, repo: Repository, data: Any) -> PullRequest:
        pr = convert.pull_request(data)
        with self._lock:
            key = (repo.full_path, pr.number)
            if pr.state is PullRequestState.OPEN:
                self._versions[key] = (convert.version_of(data), pr.head_sha)
                self._versions.move_to_end(key)
                while len(self._versions) > REMEMBERED:
                    self._versions.popitem(last=False)
            else:
                self._versions.pop(key, None)
        return pr

    def _version(self, repo: Repository, number: int, head: str | None = None) -> int | None:
        with self._lock:
            known = self._versions.get((repo.full_path, number))
        if known is None or (head is not None and known[1] != head):
            return None
        return known[0]

    # --- the calls ---------------------------------------------------------------------

    def get(self, repo: Repository, number: int) -> tuple[PullRequest, Any]:
        data = self._api.call(
            "get_pull_request", "GET", f"{repo_path(repo)}/pull-requests/{number}", pr=number
        )
        return self._seen(repo, data), data

    def find_open(self, repo: Repository, *, head: str, base: str) -> PullRequest | None:
        start = 0
        while True:
            page = self._api.call(
                "find_pull_request",
                "GET",
                f"{repo_path(repo)}/pull-requests",
                params={
                    "state": "OPEN",
                    "direction": "OUTGOING",
                    "at": f"refs/heads/{head}",
                    "limit": PAGE,
                    "start": start,
                },
                head=head,
                base=base,
            )
            values = page.get("values") if isinstance(page, dict) else None
            if not isinstance(values, list):
                raise ScmError("Bitbucket Data Center's pull requests are not a page of them")
            found = [
                v
                for v in values
                if convert.branch_of(v.get("fromRef")) == head
                and convert.branch_of(v.get("toRef")) == base
            ]
            if found:
                return self._seen(repo, min(found, key=lambda v: int(v["id"])))
            if page.get("isLastPage", True) or page.get("nextPageStart") is None:
                return None
            start = int(page["nextPageStart"])

    def open(self, repo: Repository, *, head: str, base: str, title: str, body: str) -> PullRequest:
        request = {"title": title, "description": body, "fromRef": _ref(head), "toRef": _ref(base)}
        try:
            data = self._api.call(
                "open_pull_request",
                "POST",
                f"{repo_path(repo)}/pull-requests",
                body=request,
                head=head,
                base=base,
            )
        except ScmConflict as refused:
            existing = _existing(refused)
            if existing is not None:
                return self._seen(repo, existing)
            found = self.find_open(repo, head=head, base=base)
            if found is None:
                raise
            return found
        return self._seen(repo, data)

    def update(self, repo: Repository, *, number: int, title: str, body: str) -> PullRequest:
        version = self._version(repo, number)
        for attempt in (1, 2):
            if version is None:
                pr, data = self.get(repo, number)
                if pr.state is not PullRequestState.OPEN:
                    raise ScmConflict(f"pull request {number} is {pr.state.value}", lasting=True)
                version = convert.version_of(data)
            try:
                data = self._api.call(
                    "update_pull_request",
                    "PUT",
                    f"{repo_path(repo)}/pull-requests/{number}",
                    body={"version": version, "title": title, "description": body},
                    pr=number,
                )
            except ScmConflict as refused:
                if refused.lasting or attempt == 2:
                    raise
                version = None
                continue
            return self._seen(repo, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def merge(self, repo: Repository, *, number: int, expected_head_sha: str, message: str) -> str:
        version = self._version(repo, number, expected_head_sha)
        for attempt in (1, 2):
            if version is None:
                pr, data = self.get(repo, number)
                _mergeable(pr, number, expected_head_sha)
                version = convert.version_of(data)
            request: dict[str, Any] = {"message": message} if message else {}
            if self._strategy:
                request["strategyId"] = self._strategy
            try:
                merged = self._api.call(
                    "merge_pull_request",
                    "POST",
                    f"{repo_path(repo)}/pull-requests/{number}/merge",
                    params={"version": version},
                    body=request,
                    pr=number,
                    sha=expected_head_sha,
                )
            except ScmConflict as refused:
                if refused.lasting or attempt == 2:
                    raise
                version = None  # out of date: read again, and refuse a moved head
                continue
            pr = self._seen(repo, merged)
            if pr.state is not PullRequestState.MERGED or not pr.merge_sha:
                raise ScmConflict(f"Bitbucket did not merge pull request {number}")
            return pr.merge_sha
        raise AssertionError("unreachable")  # pragma: no cover

    def decline(self, repo: Repository, *, number: int) -> None:
        version = self._version(repo, number)
        if version is None:
            pr, data = self.get(repo, number)
            if pr.state is not PullRequestState.OPEN:
                return
            version = convert.version_of(data)
        self._api.call(
            "close_pull_request",
            "POST",
            f"{repo_path(repo)}/pull-requests/{number}/decline",
            params={"version": version},
            body={},
            pr=number,
        )
        with self._lock:
            self._versions.pop((repo.full_path, number), None)

    def comment(self, repo: Repository, *, number: int, body: str) -> None:
        self._api.call(
            "comment_pull_request",
            "POST",
            f"{repo_path(repo)}/pull-requests/{number}/comments",
            body={"text": body},
            pr=number,
        )

    def reviews(self, repo: Repository, *, number: int) -> list[Review]:
        data = self._api.call(
            "get_reviews", "GET", f"{repo_path(repo)}/pull-requests/{number}", pr=number
        )
        self._seen(repo, data)
        return convert.reviews(data)


def _existing(refused: ScmConflict) -> Any:
    """The open pull request a ``DuplicatePullRequestException`` names, if it does."""
    cause = refused.__cause__
    if not isinstance(cause, BitbucketHTTPError) or not isinstance(cause.data, dict):
        return None
    for error in cause.data.get("errors") or []:
        if isinstance(error, dict) and isinstance(error.get("existingPullRequest"), dict):
            return error["existingPullRequest"]
    return None


def _mergeable(pr: PullRequest, number: int, expected: str) -> None:
    """ScmConflict unless ``pr`` is open and drafts no more, with ``expected`` as its head."""
    if pr.state is not PullRequestState.OPEN:
        raise ScmConflict(f"pull request {number} not merged: it is {pr.state.value}", lasting=True)
    if pr.draft:
        raise ScmConflict(f"pull request {number} not merged: it is a draft", lasting=True)
    if pr.head_sha != expected:
        raise ScmConflict(
            f"pull request {number} not merged: its head moved to {pr.head_sha[:12]}, "
            f"expected {expected[:12]}"
        )
