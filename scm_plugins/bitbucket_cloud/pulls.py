"""Promotion pull requests on Bitbucket Cloud: find, open (idempotent), update, merge,
decline, comment, and the reviews of the approval gate.

Cloud's merge takes no expected head. Right before merging, the pull request's head is
read again, as its source branch's tip (``git ls-remote``: what Bitbucket merges, and
never behind a push, as the pull request's own record can be for a moment), and the
merge is refused (``ScmConflict``) when it is not the head the promoter decided on. What
remains is the window between that read and Bitbucket's merge, one round trip: a push to
the source branch inside it is merged (docs/bitbucket.md). A pull request declined or
merged by a person meanwhile is refused by Bitbucket itself.

Opening a pull request that is open already returns that one (Cloud answers with it).
Calls (REST): find 1, open 1, update 1, merge 1 (+1 when the pull request's source branch
is not known yet), decline 2 (comment, then decline), comment 1, reviews 1; plus the git
reads of ``tips``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Literal
from urllib.parse import quote

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmError
from promoter.models import PullRequest, PullRequestState, Review
from scm_plugins.bitbucket import BitbucketApi, same_commit
from scm_plugins.bitbucket_cloud import convert
from scm_plugins.bitbucket_cloud.tips import Tips

PAGE = 50
REMEMBERED = 4096


def repo_path(repo: Repository) -> str:
    """``/2.0/repositories/{workspace}/{slug}``."""
    parts = [p for p in repo.full_path.split("/") if p]
    if len(parts) < 2:
        raise ScmError(f"repository {repo.name}: path must be workspace/slug, not {repo.full_path}")
    return f"/2.0/repositories/{quote(parts[-2], safe='')}/{quote(parts[-1], safe='')}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Pulls:
    """The pull-request half of the Cloud plugin."""

    def __init__(
        self,
        api: BitbucketApi,
        tips: Tips,
        *,
        strategy: Literal["merge_commit", "squash", "fast_forward"],
    ) -> None:
        self._api = api
        self._tips = tips
        self._strategy = strategy
        self._branches: OrderedDict[tuple[str, int], tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def _seen(self, repo: Repository, data: Any) -> PullRequest:
        source, target = convert.branches(data)
        state = convert.STATES.get(str(data.get("state")), PullRequestState.CLOSED)
        short = convert.head_hash(data)
        if state is PullRequestState.OPEN:
            head = self._tips.resolve(repo, short, source)
        else:
            head = self._tips.known(short) or short
        merge = convert.merge_hash(data)
        merge_sha = (self._tips.known(merge) or merge) if merge else None
        with self._lock:
            key = (repo.full_path, int(data["id"]))
            self._branches[key] = (source, target)
            self._branches.move_to_end(key)
            while len(self._branches) > REMEMBERED:
                self._branches.popitem(last=False)
        return convert.pull_request(data, head_sha=head, merge_sha=merge_sha)

    def get(self, repo: Repository, number: int) -> PullRequest:
        data = self._api.call(
            "get_pull_request", "GET", f"{repo_path(repo)}/pullrequests/{number}", pr=number
        )
        return self._seen(repo, data)

    def find_open(self, repo: Repository, *, head: str, base: str) -> PullRequest | None:
        query = (
            f"source.branch.name = {_quoted(head)} AND destination.branch.name = {_quoted(base)}"
        )
        page = 1
        while True:
            answer = self._api.call(
                "find_pull_request",
                "GET",
                f"{repo_path(repo)}/pullrequests",
                params={"state": "OPEN", "q": query, "pagelen": PAGE, "page": page},
                head=head,
                base=base,
            )
            values = answer.get("values") if isinstance(answer, dict) else None
            if not isinstance(values, list):
                raise ScmError("Bitbucket Cloud's pull requests are not a page of them")
            found = [
                v
                for v in values
                if isinstance(v, dict)
                and v.get("state") == "OPEN"
                and convert.branches(v) == (head, base)
            ]
            if found:
                return self._seen(repo, min(found, key=lambda v: int(v["id"])))
            if not answer.get("next"):
                return None
            page += 1

    def open(self, repo: Repository, *, head: str, base: str, title: str, body: str) -> PullRequest:
        data = self._api.call(
            "open_pull_request",
            "POST",
            f"{repo_path(repo)}/pullrequests",
            body={
                "title": title,
                "description": body,
                "source": {"branch": {"name": head}},
                "destination": {"branch": {"name": base}},
                "close_source_branch": False,
            },
            head=head,
            base=base,
        )
        return self._seen(repo, data)

    def update(self, repo: Repository, *, number: int, title: str, body: str) -> PullRequest:
        data = self._api.call(
            "update_pull_request",
            "PUT",
            f"{repo_path(repo)}/pullrequests/{number}",
            body={"title": title, "description": body},
            pr=number,
        )
        pr = self._seen(repo, data)
        if pr.state is not PullRequestState.OPEN:
            raise ScmConflict(f"pull request {number} is {pr.state.value}", lasting=True)
        return pr

    def _source(self, repo: Repository, number: int) -> tuple[str, str]:
        with self._lock:
            known = self._branches.get((repo.full_path, number))
        if known is not None:
            return known
        pr = self.get(repo, number)
        if pr.state is not PullRequestState.OPEN:
            raise ScmConflict(
                f"pull request {number} not merged: it is {pr.state.value}", lasting=True
            )
        return pr.head_branch, pr.base_branch

    def merge(self, repo: Repository, *, number: int, expected_head_sha: str, message: str) -> str:
        self._tips.learn(expected_head_sha)
        source, target = self._source(repo, number)
        head = self._tips.tip(repo, source)
        if head != expected_head_sha.lower():
            raise ScmConflict(
                f"pull request {number} not merged: its head moved to {(head or 'nothing')[:12]}, "
                f"expected {expected_head_sha[:12]}"
            )
        request: dict[str, Any] = {
            "type": "pullrequest_merge_parameters",
            "merge_strategy": self._strategy,
            "close_source_branch": False,
        }
        if message:
            request["message"] = message
        data = self._api.call(
            "merge_pull_request",
            "POST",
            f"{repo_path(repo)}/pullrequests/{number}/merge",
            body=request,
            pr=number,
            sha=expected_head_sha,
        )
        if not isinstance(data, dict) or data.get("state") != "MERGED":
            raise ScmConflict(f"Bitbucket did not merge pull request {number}")
        return self._merge_sha(repo, data, target, expected_head_sha)

    def _merge_sha(self, repo: Repository, data: dict[str, Any], target: str, head: str) -> str:
        """The merge's full SHA: the head (a fast-forward), the target's tip (from git), or,
        when the target moved on already, Bitbucket's answer about the commit."""
        short = convert.merge_hash(data)
        if not short or same_commit(short, head):
            return head
        known = self._tips.known(short)
        if known is not None:
            return known
        tip = self._tips.tip(repo, target)
        if tip is not None and same_commit(short, tip):
            return tip
        commit = self._api.call("get_commit", "GET", f"{repo_path(repo)}/commit/{short}", sha=short)
        full = str(commit.get("hash") or "") if isinstance(commit, dict) else ""
        if not same_commit(short, full):
            raise ScmError(f"Bitbucket Cloud names no commit {short}")
        self._tips.learn(full)
        return full

    def decline(self, repo: Repository, *, number: int) -> None:
        self._api.call(
            "close_pull_request",
            "POST",
            f"{repo_path(repo)}/pullrequests/{number}/decline",
            body={},
            pr=number,
        )

    def comment(self, repo: Repository, *, number: int, body: str) -> None:
        self._api.call(
            "comment_pull_request",
            "POST",
            f"{repo_path(repo)}/pullrequests/{number}/comments",
            body={"content": {"raw": body}},
            pr=number,
        )

    def reviews(self, repo: Repository, *, number: int) -> list[Review]:
        data = self._api.call(
            "get_reviews", "GET", f"{repo_path(repo)}/pullrequests/{number}", pr=number
        )
        if not isinstance(data, dict):
            raise ScmError("Bitbucket Cloud answered something that is not a pull request")
        return convert.reviews(data)
