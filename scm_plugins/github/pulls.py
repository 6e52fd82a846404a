"""Promotion pull requests on GitHub: find, open (idempotent), update, merge, close.

Call counts (each one counted by ``ScmCalls``): find 1 (conditional, free when
unchanged), open 1 + 1 for labels, update 1 + 1 when labels are missing, merge 1,
close 2 (comment, then close), comment 1.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmError
from promoter.models import PullRequest, PullRequestState
from scm_plugins.github.api import RepoApi
from scm_plugins.github.errors import GitHubHTTPError

ALREADY_EXISTS = "a pull request already exists"


def pull_request(data: dict[str, Any]) -> PullRequest:
    """A GitHub pull request (REST shape) as the promoter's ``PullRequest``."""
    # An open PR is open whatever else it says; list items have no "merged" field.
    is_open = data.get("state") == "open"
    merged = not is_open and bool(data.get("merged", data.get("merged_at")))
    merge_sha = data.get("merge_commit_sha") if merged else None
    state = (
        PullRequestState.OPEN
        if is_open
        else PullRequestState.MERGED
        if merged
        else PullRequestState.CLOSED
    )
    return PullRequest(
        id=str(data["id"]),
        number=int(data["number"]),
        head_branch=str(data["head"]["ref"]),
        base_branch=str(data["base"]["ref"]),
        head_sha=str(data["head"]["sha"]),
        state=state,
        title=str(data.get("title") or ""),
        body=str(data.get("body") or ""),
        labels=tuple(str(label["name"]) for label in data.get("labels") or []),
        url=str(data.get("html_url") or ""),
        draft=bool(data.get("draft")),
        merge_sha=str(merge_sha) if merge_sha else None,
        author=str((data.get("user") or {}).get("login") or ""),
    )


def _open_match(found: Any, *, head: str, base: str) -> PullRequest | None:
    """The open pull request for head/base in a page of ``GET /pulls`` (the oldest, when
    there are several): what a lookup returns, and all the ETag cache keeps of the page
    (GitHub's JSON of a pull request is about 20 KB once parsed). ``ScmError`` for a page
    of another shape (a proxy's page, a truncated answer)."""
    page = found or []
    if not isinstance(page, list) or not all(
        isinstance(pr, dict)
        and isinstance(pr.get("head"), dict)
        and isinstance(pr.get("base"), dict)
        for pr in page
    ):
        raise ScmError(f"GitHub's open pull requests for {head} into {base} are not a list of them")
    matches = [pr for pr in page if pr["head"].get("ref") == head and pr["base"].get("ref") == base]
    if not matches:
        return None
    return pull_request(min(matches, key=lambda pr: int(pr["number"])))


class Pulls:
    """The PullRequests half of the GitHub plugin."""

    def __init__(self, api: RepoApi, *, merge_method: Literal["merge", "squash", "rebase"]) -> None:
        self._api = api
        self._merge_method = merge_method

    def find_open(self, *, repo: Repository, head: str, base: str) -> PullRequest | None:
        owner = repo.full_path.split("/", 1)[0]
        found: PullRequest | None = self._api.call(
            repo,
            "find_pull_request",
            "GET",
            "/pulls",
            params={"state": "open", "head": f"{owner}:{head}", "base": base, "per_page": 10},
            conditional=True,
            keep=partial(_open_match, head=head, base=base),
        )
        return found

    def open(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        try:
            data = self._api.call(
                repo,
                "open_pull_request",
                "POST",
                "/pulls",
                body={"title": title, "head": head, "base": base, "body": body, "draft": False},
                head=head,
                base=base,
            )
        except ScmConflict as exc:
            cause = exc.__cause__
            if not (isinstance(cause, GitHubHTTPError) and ALREADY_EXISTS in cause.message.lower()):
                raise
            existing = self.find_open(repo=repo, head=head, base=base)
            if existing is None:
                raise
            return existing
        pr = pull_request(data)
        return self._add_labels(repo, pr, labels)

    def update(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        data = self._api.call(
            repo,
            "update_pull_request",
            "PATCH",
            f"/pulls/{number}",
            body={"title": title, "body": body},
            pr=number,
        )
        return self._add_labels(repo, pull_request(data), labels)

    def _add_labels(
        self, repo: Repository, pr: PullRequest, labels: tuple[str, ...]
    ) -> PullRequest:
        """Add the missing labels; labels people added (an approval, say) stay."""
        missing = [label for label in labels if label not in pr.labels]
        if not missing:
            return pr
        answer = self._api.call(
            repo,
            "label_pull_request",
            "POST",
            f"/issues/{pr.number}/labels",
            body={"labels": missing},
            pr=pr.number,
        )
        names = tuple(str(label["name"]) for label in answer or [])
        return pr.model_copy(update={"labels": names or (*pr.labels, *missing)})

    def merge(self, *, repo: Repository, number: int, expected_head_sha: str, message: str) -> str:
        title, _, rest = message.strip().partition("\n")
        request: dict[str, Any] = {"sha": expected_head_sha, "merge_method": self._merge_method}
        if title:
            request["commit_title"] = title
            request["commit_message"] = rest.strip()
        data = self._api.call(
            repo, "merge_pull_request", "PUT", f"/pulls/{number}/merge", body=request, pr=number
        )
        if not data or not data.get("merged"):
            raise ScmConflict(f"GitHub did not merge pull request #{number}")
        return str(data["sha"])

    def close(self, *, repo: Repository, number: int, comment: str) -> None:
        """Comment first, then close: a crash in between repeats the comment, never loses it."""
        if comment:
            self.comment(repo=repo, number=number, body=comment)
        self._api.call(
            repo,
            "close_pull_request",
            "PATCH",
            f"/pulls/{number}",
            body={"state": "closed"},
            pr=number,
        )

    def request_reviewers(
        self, *, repo: Repository, number: int, users: list[str], teams: list[str]
    ) -> None:
        """``POST /pulls/{n}/requested_reviewers``: one call; teams by slug (``org/slug`` or
        a slug of the repository's owner)."""
        slugs = [team.rpartition("/")[2] for team in teams]
        self._api.call(
            repo,
            "request_reviewers",
            "POST",
            f"/pulls/{number}/requested_reviewers",
            body={"reviewers": users, "team_reviewers": slugs},
            pr=number,
        )

    def comment(self, *, repo: Repository, number: int, body: str) -> None:
        self._api.call(
            repo,
            "comment_pull_request",
            "POST",
            f"/issues/{number}/comments",
            body={"body": body},
            pr=number,
        )
