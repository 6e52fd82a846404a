"""The fake GitHub's endpoints: the route table, pulls, labels, comments, the App.

Each handler takes the path's groups plus ``query`` and ``body`` and returns
``(status, headers, body)``; bodies start from GitHub's genuine examples.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import fake_git
from .fake_commits import CommitRoutes
from .fake_deployments import DeploymentRoutes
from .fake_queue import QueueRoutes
from .fake_requested import RequestedRoutes
from .fake_reviews import ReviewRoutes
from .fake_rollup import RollupRoutes
from .fake_state import NOT_FOUND, Answer, FakeRepo, Handler, Refused, now
from .fake_statuses import StatusRoutes
from .genuine import Genuine

REPO = r"^/repos/([^/]+)/([^/]+)"


def _validation(message: str, **error: str) -> Answer:
    errors = [{"resource": "PullRequest", "code": "custom", "message": message, **error}]
    return 422, {}, {"message": "Validation Failed", "errors": errors, "documentation_url": ""}


class Routes(
    ReviewRoutes,
    StatusRoutes,
    CommitRoutes,
    RequestedRoutes,
    DeploymentRoutes,
    QueueRoutes,
    RollupRoutes,
):
    app: Any

    def __init__(self, genuine: Genuine, *, base_url: str, html_url: str) -> None:
        ReviewRoutes.__init__(self, self._pull)
        self.genuine = genuine
        self.base_url = base_url
        self.html_url = html_url
        self.repositories: dict[str, FakeRepo] = {}
        self._ids = itertools.count(1000)
        self._numbers = itertools.count(1)
        self.on_push: Callable[[str, str, str | None, str], None] | None = None
        """Called as GitHub sends its ``push`` webhook after a merge moved a branch:
        (full name, branch, before, after)."""
        self._table: list[tuple[str, re.Pattern[str], Handler, str]] = [
            ("GET", re.compile(REPO + r"/pulls$"), self._list_pulls, "repo"),
            ("POST", re.compile(REPO + r"/pulls$"), self._create_pull, "repo"),
            ("GET", re.compile(REPO + r"/pulls/(\d+)$"), self._get_pull, "repo"),
            ("PATCH", re.compile(REPO + r"/pulls/(\d+)$"), self._update_pull, "repo"),
            ("PUT", re.compile(REPO + r"/pulls/(\d+)/merge$"), self._merge_pull, "repo"),
            ("POST", re.compile(REPO + r"/issues/(\d+)/labels$"), self._add_labels, "repo"),
            ("PUT", re.compile(REPO + r"/issues/(\d+)/labels$"), self._set_labels, "repo"),
            ("POST", re.compile(REPO + r"/issues/(\d+)/comments$"), self._comment, "repo"),
            ("POST", re.compile(REPO + r"/statuses/(\w+)$"), self._create_status, "repo"),
            ("GET", re.compile(REPO + r"/commits/([^/]+)/status$"), self._combined, "repo"),
            ("GET", re.compile(REPO + r"/commits/([^/]+)/check-runs$"), self._checks, "repo"),
            ("POST", re.compile(REPO + r"/check-runs$"), self._create_check_run, "repo"),
            ("GET", re.compile(REPO + r"/installation$"), self._installation, "app"),
            ("POST", re.compile(r"^/app/installations/(\d+)/access_tokens$"), self._mint, "app"),
        ]
        self._table.extend(self.review_routes())
        self._table.extend(self.commit_routes())
        self._table.extend(self.requested_routes())
        self._table.extend(self.deployment_routes())
        self._table.extend(self.rollup_routes())  # the queue's GraphQL behind it
        self._table.extend(self.queue_routes())

    def _checks_landed(self, full_name: str, sha: str) -> None:
        self.group_checks_landed(full_name, sha)

    def new_repository(self, full_name: str, git_dir: Path) -> FakeRepo:
        return FakeRepo(full_name, git_dir)

    def route(self, method: str, path: str) -> tuple[Handler, tuple[str, ...], str] | None:
        for verb, pattern, handler, kind in self._table:
            match = pattern.match(path)
            if verb == method and match:
                return handler, match.groups(), kind
        return None

    def repo(self, owner: str, name: str) -> FakeRepo | None:
        return self.repositories.get(f"{owner}/{name}".lower())

    # --- test helpers (what people and CI do on GitHub) ----------------------------

    def pull(self, full_name: str, number: int) -> dict[str, Any]:
        repo = self.repositories[full_name.lower()]
        return self._render(repo, repo.pulls[number])

    def pulls_of(self, full_name: str, *, state: str = "all") -> list[dict[str, Any]]:
        repo = self.repositories[full_name.lower()]
        out = [self._render(repo, pr) for pr in repo.pulls.values()]
        return [pr for pr in out if state in ("all", pr["state"])]

    def comments_of(self, full_name: str, number: int) -> list[str]:
        return [c["body"] for c in self.repositories[full_name.lower()].comments.get(number, [])]

    # --- pulls ----------------------------------------------------------------------

    def _render(
        self, repo: FakeRepo, pr: dict[str, Any], *, listed: bool = False
    ) -> dict[str, Any]:
        template = self.genuine.openapi("pulls.list.200" if listed else "pulls.create.201")
        out: dict[str, Any] = template[0] if listed else template
        api = f"{self.base_url}/repos/{repo.full_name}"
        head_sha = pr["frozen_head"] or fake_git.branch_sha(repo.git_dir, pr["head"]) or "0" * 40
        base_sha = fake_git.branch_sha(repo.git_dir, pr["base"]) or "0" * 40
        owner = repo.full_name.split("/")[0]
        label = self.genuine.openapi("pulls.create.201")["labels"][0]
        out.update(
            url=f"{api}/pulls/{pr['number']}",
            html_url=f"{self.html_url}/{repo.full_name}/pull/{pr['number']}",
            issue_url=f"{api}/issues/{pr['number']}",
            id=pr["id"],
            number=pr["number"],
            state=pr["state"],
            title=pr["title"],
            body=pr["body"],
            labels=[{**label, "name": name, "default": False} for name in pr["labels"]],
            draft=pr["draft"],
            created_at=pr["created_at"],
            updated_at=pr["updated_at"],
            closed_at=pr["closed_at"],
            merged_at=pr["merged_at"],
            merge_commit_sha=pr["merge_commit_sha"],
        )
        people, teams = out.get("requested_reviewers") or [{}], out.get("requested_teams") or [{}]
        out.update(
            requested_reviewers=[
                {**people[0], "login": u} for u in pr.get("requested_reviewers", [])
            ],
            requested_teams=[
                {**teams[0], "slug": t, "name": t} for t in pr.get("requested_teams", [])
            ],
        )
        out["head"].update(label=f"{owner}:{pr['head']}", ref=pr["head"], sha=head_sha)
        out["base"].update(label=f"{owner}:{pr['base']}", ref=pr["base"], sha=base_sha)
        if not listed:
            out.update(merged=pr["merged_at"] is not None, mergeable=pr["state"] == "open")
        return out

    def _repo(self, owner: str, name: str) -> FakeRepo:
        repo = self.repo(owner, name)
        if repo is None:
            raise Refused(404, NOT_FOUND)
        return repo

    def _pull(self, owner: str, name: str, number: str) -> tuple[FakeRepo, dict[str, Any]]:
        repo = self._repo(owner, name)
        if int(number) not in repo.pulls:
            raise Refused(404, NOT_FOUND)
        return repo, repo.pulls[int(number)]

    def _list_pulls(self, owner: str, name: str, *, query: dict[str, str], body: Any) -> Answer:
        repo = self._repo(owner, name)
        state = query.get("state", "open")
        head = query.get("head", "")
        found = [
            pr
            for pr in sorted(repo.pulls.values(), key=lambda p: -p["number"])
            if state in ("all", pr["state"])
            and ("base" not in query or pr["base"] == query["base"])
            and (":" not in head or f"{owner}:{pr['head']}".lower() == head.lower())
        ]
        per_page, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        window = found[(page - 1) * per_page : page * per_page]
        return 200, {}, [self._render(repo, pr, listed=True) for pr in window]

    def _create_pull(self, owner: str, name: str, *, query: dict[str, str], body: Any) -> Answer:
        repo = self._repo(owner, name)
        head, base = str(body.get("head", "")), str(body.get("base", ""))
        head_sha = fake_git.branch_sha(repo.git_dir, head)
        base_sha = fake_git.branch_sha(repo.git_dir, base)
        if head_sha is None:
            return _validation("", field="head", code="invalid")
        if base_sha is None:
            return _validation("", field="base", code="invalid")
        for pr in repo.pulls.values():
            if pr["state"] == "open" and (pr["head"], pr["base"]) == (head, base):
                return _validation(f"A pull request already exists for {owner}:{head}.")
        if fake_git.is_ancestor(repo.git_dir, head_sha, base_sha):
            return _validation(f"No commits between {base} and {head}")
        number, stamp = next(self._numbers), now()
        repo.pulls[number] = {
            "id": next(self._ids),
            "number": number,
            "head": head,
            "base": base,
            "title": str(body.get("title", "")),
            "body": body.get("body"),
            "draft": bool(body.get("draft", False)),
            "state": "open",
            "labels": [],
            "created_at": stamp,
            "updated_at": stamp,
            "closed_at": None,
            "merged_at": None,
            "merge_commit_sha": None,
            "frozen_head": None,
        }
        return 201, {}, self._render(repo, repo.pulls[number])

    def _get_pull(self, owner: str, name: str, number: str, **_: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        return 200, {}, self._render(repo, pr)

    def _update_pull(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        for key in ("title", "body"):
            if key in body:
                pr[key] = body[key]
        if body.get("state") == "closed" and pr["state"] == "open":
            pr["frozen_head"] = fake_git.branch_sha(repo.git_dir, pr["head"])
            pr.update(state="closed", closed_at=now())
        pr["updated_at"] = now()
        return 200, {}, self._render(repo, pr)

    def _merge_pull(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        body = body or {}
        method = body.get("merge_method", "merge")
        if method not in ("merge", "squash", "rebase"):
            return 422, {}, {"message": "Validation Failed", "errors": ["merge_method"]}
        if pr["state"] != "open":
            return 405, {}, self.genuine.openapi("pulls.merge.405")
        if (repo.full_name.lower(), pr["base"]) in self.queue_branches:
            return 405, {}, self.queue_refusal()
        head_sha = fake_git.branch_sha(repo.git_dir, pr["head"])
        if head_sha is None:
            return 405, {}, self.genuine.openapi("pulls.merge.405")
        if body.get("sha") and body["sha"] != head_sha:
            return 409, {}, self.genuine.openapi("pulls.merge.409")
        before = fake_git.branch_sha(repo.git_dir, pr["base"])
        title = body.get("commit_title") or f"Merge pull request #{pr['number']} from {pr['head']}"
        message = title + ("\n\n" + body["commit_message"] if body.get("commit_message") else "")
        try:
            merged = fake_git.merge(
                repo.git_dir, base=pr["base"], head_sha=head_sha, method=method, message=message
            )
        except fake_git.BaseMoved:
            return 405, {}, {"message": "Base branch was modified. Review and try the merge again."}
        stamp = now()
        pr.update(
            state="closed",
            closed_at=stamp,
            merged_at=stamp,
            updated_at=stamp,
            merge_commit_sha=merged,
            frozen_head=head_sha,
        )
        if self.on_push is not None:
            self.on_push(f"{owner}/{name}", pr["base"], before, merged)
        answer = self.genuine.openapi("pulls.merge.200")
        answer["sha"] = merged
        return 200, {}, answer

    def _add_labels(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        for label in body.get("labels", []):
            if label not in pr["labels"]:
                pr["labels"].append(label)
        return 200, {}, self._render(repo, pr)["labels"]

    def _set_labels(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        pr["labels"] = list(dict.fromkeys(body.get("labels", [])))
        return 200, {}, self._render(repo, pr)["labels"]

    def _comment(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, _ = self._pull(owner, name, number)
        comment = self.genuine.openapi("issues.create-comment.201")
        comment.update(id=next(self._ids), body=body["body"], created_at=now(), updated_at=now())
        repo.comments.setdefault(int(number), []).append(comment)
        return 201, {}, comment

    # --- App ------------------------------------------------------------------------

    def _installation(self, owner: str, name: str, **_: Any) -> Answer:
        if self.app is None or self.repo(owner, name) is None:
            return 404, {}, {"message": "Not Found"}
        return (
            200,
            {},
            {
                "id": self.app.installation_id,
                "app_id": self.app.app_id,
                "account": {"login": owner, "type": "Organization"},
                "repository_selection": "all",
                "access_tokens_url": (
                    f"{self.base_url}/app/installations/{self.app.installation_id}/access_tokens"
                ),
                "permissions": {"contents": "write", "pull_requests": "write", "statuses": "write"},
            },
        )

    def _mint(self, installation: str, **_: Any) -> Answer:
        if self.app is None or int(installation) != self.app.installation_id:
            return 404, {}, {"message": "Not Found"}
        token, expires = self.issue_installation_token()  # type: ignore[attr-defined]
        stamp = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return (
            201,
            {},
            {
                "token": token,
                "expires_at": stamp,
                "permissions": {"contents": "write", "pull_requests": "write"},
                "repository_selection": "all",
            },
        )
