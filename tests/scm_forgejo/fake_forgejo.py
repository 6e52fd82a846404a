"""A stateful fake of Forgejo's REST API on 127.0.0.1, backed by real bare git repositories.

A real HTTP server (the plugin runs in another process, so ``responses`` cannot
reach it). Pull requests, labels, comments and commit statuses live in memory;
merges are real merge commits (``commit-tree`` + compare-and-swap ``update-ref``) in
the bare repository. Pull requests are the genuine Gitea ``PullRequest`` object of
``tests/fixtures/forgejo/webhooks/gitea-pull_request-opened.json`` with the fields
that matter filled in. Forgejo's rules the plugin relies on: one open PR per
head/base (409), a merge whose ``head_commit_id`` is not the head is refused (409),
tokens are checked (401), and labels set on an issue by name are the repository's
labels of those names: an unknown name is dropped without an error, as Forgejo and
Gitea do (``GetLabelIDsInRepoByNames``); ``POST /labels`` creates one. ``fail_next``
injects faults; ``on_handled`` runs after a request changed the state and before its
answer leaves (to crash the plugin there); ``on_push`` where Forgejo would send a push
webhook after a merge. A PR is opened by ``user`` (the token's
owner); ``review`` adds a person's review, the genuine ``PullReview`` of
``tests/fixtures/forgejo/rest/gitea-reviews.json`` with its fields filled in. git
reaches each repository over smart HTTP at ``{url}/{full_name}.git`` with the token
(``git_http``); ``outage`` takes the whole fake down (a status for every request, or
connections closed unanswered).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import git_http

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "forgejo"
Answer = tuple[int, Any]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return done.stdout.strip()


@dataclass
class Repo:
    path: Path
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[str]] = field(default_factory=dict)
    labels: list[dict[str, Any]] = field(default_factory=list)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class Call:
    method: str
    path: str
    status: int
    body: Any


class FakeForgejo:
    def __init__(self, *, token: str, user: str = "promoter-bot") -> None:
        self.token = token
        self.user = user
        self.repos: dict[str, Repo] = {}
        self.calls: list[Call] = []
        self.on_handled: Callable[[str, str, int], None] | None = None
        self.on_push: Callable[[str, str, str, str], None] | None = None
        """Called as ``(full_name, branch, before, after)`` after a merge moved a branch:
        where Forgejo would send its push webhook."""
        self._faults: list[tuple[str, re.Pattern[str], int, int]] = []
        self.outage: int | None = None
        """While set, every request is answered with this status, or (0) its connection
        closed without an answer: Forgejo down."""
        self.fault_headers: dict[str, str] = {}
        self._lock = threading.RLock()
        self._ids = 1000
        self._template = json.loads(
            (FIXTURES / "webhooks" / "gitea-pull_request-opened.json").read_text()
        )["pull_request"]
        self._review = json.loads((FIXTURES / "rest" / "gitea-reviews.json").read_text())[0]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def _serve(self) -> None:
                if fake.outage is not None:  # Forgejo is down: every request, git's too
                    if fake.outage == 0:
                        self.close_connection = True  # closed with no answer at all
                        return
                    self.send_response(fake.outage)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                git = git_http.repository_of(self.path)
                if git is not None and git[0] in fake.repos:
                    git_http.serve(self, fake.repos[git[0]].path, git[1], fake.token)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body = fake.handle(
                    self.command, self.path, self.headers.get("Authorization", ""), raw
                )
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (fake.fault_headers if status >= 400 else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeForgejo:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_repository(self, full_name: str, path: Path) -> None:
        self.repos[full_name] = Repo(path)

    def fail_next(self, method: str, path: str, status: int, times: int = 1) -> None:
        self._faults.append((method, re.compile(path), status, times))

    def pulls_of(self, full_name: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(p) for _, p in sorted(self.repos[full_name].pulls.items())]

    # --- dispatch ---------------------------------------------------------------------

    def handle(self, method: str, target: str, auth: str, raw: bytes) -> Answer:
        url = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = json.loads(raw) if raw else None
        with self._lock:
            status, answer = self._answer(method, url.path, query, auth, body)
            self.calls.append(Call(method, url.path, status, body))
        hook = self.on_handled
        if hook is not None:
            hook(method, url.path, status)
        return status, answer

    def _answer(
        self, method: str, path: str, query: dict[str, str], auth: str, body: Any
    ) -> Answer:
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return 401, {"message": "token is required"}
        for i, (m, pattern, status, times) in enumerate(self._faults):
            if m == method and pattern.search(path):
                if times <= 1:
                    del self._faults[i]
                else:
                    self._faults[i] = (m, pattern, status, times - 1)
                return status, {"message": "injected fault"}
        match = re.fullmatch(r"/api/v1/repos/([^/]+/[^/]+)(/.*)", path)
        if match is None or match.group(1) not in self.repos:
            return 404, {"message": "The target couldn't be found."}
        repo, name, rest = self.repos[match.group(1)], match.group(1), match.group(2)
        for pattern, verb, handler in self._routes():
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                return handler(repo, name, body or {}, query, *found.groups())
        return 404, {"message": "not found"}

    def _routes(self) -> list[tuple[str, str, Callable[..., Answer]]]:
        return [
            (r"/pulls", "GET", self._list_pulls),
            (r"/pulls", "POST", self._create_pull),
            (r"/pulls/(\d+)", "GET", self._get_pull),
            (r"/pulls/(\d+)", "PATCH", self._edit_pull),
            (r"/pulls/(\d+)/merge", "POST", self._merge),
            (r"/pulls/(\d+)/reviews", "GET", self._list_reviews),
            (r"/issues/(\d+)/labels", "PUT", self._labels),
            (r"/labels", "GET", self._list_labels),
            (r"/labels", "POST", self._create_label),
            (r"/issues/(\d+)/comments", "POST", self._comment),
            (r"/commits/([0-9a-f]{40})/statuses", "GET", self._get_statuses),
            (r"/statuses/([0-9a-f]{40})", "POST", self._set_status),
        ]

    # --- pull requests ----------------------------------------------------------------

    def _tip(self, repo: Repo, branch: str) -> str | None:
        try:
            return _git(repo.path, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        except RuntimeError:
            return None

    def _view(self, repo: Repo, pr: dict[str, Any]) -> dict[str, Any]:
        view = copy.deepcopy(pr)
        if view["state"] == "open":
            view["head"]["sha"] = self._tip(repo, view["head"]["ref"]) or view["head"]["sha"]
            view["base"]["sha"] = self._tip(repo, view["base"]["ref"]) or view["base"]["sha"]
        return view

    def _list_pulls(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        state = query.get("state", "open")
        limit, page = int(query.get("limit", 30)), int(query.get("page", 1))
        items = [p for _, p in sorted(repo.pulls.items()) if state == "all" or p["state"] == state]
        chunk = items[(page - 1) * limit : page * limit]
        return 200, [self._view(repo, p) for p in chunk]

    def _create_pull(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        head, base = body.get("head", ""), body.get("base", "")
        head_sha, base_sha = self._tip(repo, head), self._tip(repo, base)
        if head_sha is None or base_sha is None:
            return 404, {"message": "branch does not exist"}
        for pr in repo.pulls.values():
            if pr["state"] == "open" and (pr["head"]["ref"], pr["base"]["ref"]) == (head, base):
                return 409, {
                    "message": f"pull request already exists for these targets [id: {pr['id']}]"
                }
        self._ids += 1
        number = len(repo.pulls) + 1
        pr = copy.deepcopy(self._template)
        html = f"{self.url}/{name}/pulls/{number}"
        pr.update(
            id=self._ids,
            number=number,
            title=body.get("title", ""),
            body=body.get("body", ""),
            labels=[],
            state="open",
            merged=False,
            merged_at=None,
            merge_commit_sha=None,
            html_url=html,
            url=html,
            created_at=_now(),
            updated_at=_now(),
            comments=0,
        )
        pr["user"].update(login=self.user, username=self.user)
        pr["head"].update(label=head, ref=head, sha=head_sha)
        pr["base"].update(label=base, ref=base, sha=base_sha)
        for side in ("head", "base"):
            pr[side]["repo"].update(full_name=name, name=name.split("/")[1])
        repo.pulls[number] = pr
        return 201, self._view(repo, pr)

    def _pull(self, repo: Repo, number: str) -> dict[str, Any] | None:
        return repo.pulls.get(int(number))

    def _get_pull(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        return (200, self._view(repo, pr)) if pr else (404, {"message": "not found"})

    def _edit_pull(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return 404, {"message": "not found"}
        for key in ("title", "body"):
            if key in body:
                pr[key] = body[key]
        if body.get("state") == "closed" and pr["state"] == "open":
            pr["head"]["sha"] = self._tip(repo, pr["head"]["ref"]) or pr["head"]["sha"]
            pr.update(state="closed", closed_at=_now())
        pr["updated_at"] = _now()
        return 201, self._view(repo, pr)

    def _merge(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return 404, {"message": "not found"}
        if pr["state"] != "open":
            return 405, {"message": "The PR is already merged or closed"}
        head, base = self._tip(repo, pr["head"]["ref"]), self._tip(repo, pr["base"]["ref"])
        if head is None or base is None:
            return 405, {"message": "branch missing"}
        expected = body.get("head_commit_id")
        if expected and expected != head:
            return 409, {"message": "head out of date"}
        tree = _git(repo.path, "rev-parse", f"{head}^{{tree}}")
        message = body.get("MergeMessageField") or f"Merge pull request #{n}"
        merge = _git(repo.path, "commit-tree", tree, "-p", base, "-p", head, "-m", message)
        _git(repo.path, "update-ref", f"refs/heads/{pr['base']['ref']}", merge, base)
        pr["head"]["sha"] = head
        pr.update(state="closed", merged=True, merged_at=_now(), merge_commit_sha=merge)
        if self.on_push is not None:
            self.on_push(name, pr["base"]["ref"], base, merge)
        return 200, None

    def review(self, full_name: str, number: int, user: str, state: str = "APPROVED") -> None:
        """``user`` reviews PR ``number`` on its head (``APPROVED``, ``REQUEST_CHANGES``)."""
        with self._lock:
            repo = self.repos[full_name]
            pr = repo.pulls[number]
            self._ids += 1
            review = copy.deepcopy(self._review)
            review.update(id=self._ids, state=state, submitted_at=_now())
            review["commit_id"] = self._tip(repo, pr["head"]["ref"]) or pr["head"]["sha"]
            review["user"].update(login=user, full_name="", email=f"{user}@example.invalid")
            repo.reviews.setdefault(number, []).append(review)

    def _list_reviews(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        if self._pull(repo, n) is None:
            return 404, {"message": "not found"}
        limit, page = int(q.get("limit", 30)), int(q.get("page", 1))
        items = repo.reviews.get(int(n), [])
        return 200, copy.deepcopy(items[(page - 1) * limit : page * limit])

    def _labels(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return 404, {"message": "not found"}
        wanted = body.get("labels", [])
        pr["labels"] = [
            copy.deepcopy(label)
            for label in repo.labels
            if label["name"] in wanted or label["id"] in wanted
        ]
        return 200, pr["labels"]

    def add_label(self, full_name: str, label: str) -> None:
        """A label made by a person in the repository's settings."""
        self._create_label(
            self.repos[full_name], full_name, {"name": label, "color": "#0075ca"}, {}
        )

    def _list_labels(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        limit, page = int(query.get("limit", 30)), int(query.get("page", 1))
        return 200, copy.deepcopy(repo.labels[(page - 1) * limit : page * limit])

    def _create_label(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        color = str(body.get("color", "")).removeprefix("#")
        if not body.get("name") or not re.fullmatch(r"[0-9a-fA-F]{6}", color):
            return 422, {"message": "CreateLabelOption: name and a #rrggbb color are required"}
        self._ids += 1
        label = {
            "id": self._ids,
            "name": body["name"],
            "exclusive": False,
            "is_archived": False,
            "color": color,
            "description": body.get("description", ""),
            "url": f"{self.url}/api/v1/repos/{name}/labels/{self._ids}",
        }
        repo.labels.append(label)
        return 201, copy.deepcopy(label)

    def _comment(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        if self._pull(repo, n) is None:
            return 404, {"message": "not found"}
        repo.comments.setdefault(int(n), []).append(body.get("body", ""))
        return 201, {"id": len(repo.comments[int(n)]), "body": body.get("body", "")}

    # --- statuses: built from the field names of Gitea's CommitStatus struct ------------

    def _get_statuses(
        self, repo: Repo, name: str, body: Any, q: dict[str, str], sha: str
    ) -> Answer:
        items = list(reversed(repo.statuses.get(sha, [])))  # newest first, like Gitea
        limit, page = int(q.get("limit", 30)), int(q.get("page", 1))
        return 200, items[(page - 1) * limit : page * limit]

    def _set_status(self, repo: Repo, name: str, body: Any, q: dict[str, str], sha: str) -> Answer:
        if body.get("state") not in ("pending", "success", "error", "failure", "warning"):
            return 422, {"message": "invalid state"}
        self._ids += 1
        status = {
            "id": self._ids,
            "status": body["state"],
            "target_url": body.get("target_url", ""),
            "description": body.get("description", ""),
            "url": f"{self.url}/api/v1/repos/{name}/statuses/{sha}",
            "context": body.get("context", "default"),
            "created_at": _now(),
            "updated_at": _now(),
        }
        repo.statuses.setdefault(sha, []).append(status)
        return 201, status
