"""A stateful fake of Bitbucket Cloud's REST API (``/2.0``) on 127.0.0.1, over real bare git
repositories (served to git by their path).

Pull requests are the genuine object of ``tests/fixtures/bitbucket-cloud/rest/pr.json`` with
their fields filled in, commits named by 12 characters as Cloud names them; statuses follow
``rest/status.json``; errors ``rest/error.json``. Cloud's rules the plugin meets: opening a
pull request that is open already answers with that one; one with nothing to pull is refused
(400); a merge takes no expected head and merges the source branch as it is then
(``merge_commit``, ``squash``, ``fast_forward``), refused with 400 on a conflict or when a
fast-forward cannot be made; a declined or merged pull request is not merged again; one
status per key and commit; the hourly rate limit answered 429 with no time to wait
(``limit_for``); credentials checked (basic or bearer). People act through ``person_merges``,
``person_declines``, ``approve``, ``request_changes``.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fixture_paths import FIXTURES
from tests.scm_bitbucket.fake_http import Answer, FakeServer, git, is_ancestor, merge, tip

GENUINE = FIXTURES / "bitbucket-cloud"
STRATEGIES = {"merge_commit": "merge", "squash": "squash", "fast_forward": "ff-only"}


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _genuine(name: str) -> Any:
    return json.loads((GENUINE / name).read_text())


@dataclass
class Repo:
    path: Path
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[str]] = field(default_factory=dict)


class FakeCloud(FakeServer):
    def __init__(
        self, *, username: str, password: str, user: str = "promoter-bot", token: str = ""
    ) -> None:
        super().__init__()
        self.credentials = {"Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}
        if token:
            self.credentials.add(f"Bearer {token}")
        self.user = user
        self.repos: dict[str, Repo] = {}
        self._template = _genuine("rest/pr.json")
        self._status = _genuine("rest/status.json")

    def __enter__(self) -> FakeCloud:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_repository(self, full_name: str, path: Path) -> None:
        self.repos[full_name] = Repo(path)

    def pulls_of(self, full_name: str) -> list[dict[str, Any]]:
        repo = self.repos[full_name]
        with self.lock:
            return [self._view(repo, p) for _, p in sorted(repo.pulls.items())]

    # --- the service's rules -----------------------------------------------------------

    def authorized(self, authorization: str, path: str) -> bool:
        return authorization in self.credentials

    def error(self, status: int, message: str) -> Answer:
        body = copy.deepcopy(_genuine("rest/error.json"))
        body["error"]["message"] = message
        return status, body, {}

    def rate_limited(self) -> Answer:
        status, body, _ = self.error(429, "Rate limit for this resource has been exceeded")
        return status, body, {"X-RateLimit-Limit": "1000", "X-RateLimit-Resource": "api"}

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> Answer:
        match = re.fullmatch(r"/2\.0/repositories/([^/]+/[^/]+)(/.*)", path)
        if match is None or match.group(1) not in self.repos:
            name = match.group(1) if match else path
            return self.error(404, f"Repository {name} not found")
        repo, rest = self.repos[match.group(1)], match.group(2)
        for pattern, verb, handler in (
            (r"/pullrequests", "GET", self._list),
            (r"/pullrequests", "POST", self._create),
            (r"/pullrequests/(\d+)", "GET", self._get),
            (r"/pullrequests/(\d+)", "PUT", self._edit),
            (r"/pullrequests/(\d+)/merge", "POST", self._merge),
            (r"/pullrequests/(\d+)/decline", "POST", self._decline),
            (r"/pullrequests/(\d+)/comments", "POST", self._comment),
            (r"/commit/([0-9a-f]{7,40})", "GET", self._commit),
            (r"/commit/([0-9a-f]{40})/statuses", "GET", self._statuses),
            (r"/commit/([0-9a-f]{40})/statuses/build", "POST", self._set_status),
        ):
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                result: Answer = handler(repo, match.group(1), body or {}, query, *found.groups())
                return result
        return self.error(404, f"No such resource: {rest}")

    def _view(self, repo: Repo, pr: dict[str, Any]) -> dict[str, Any]:
        view = copy.deepcopy(pr)
        if view["state"] == "OPEN":
            head = tip(repo.path, view["source"]["branch"]["name"])
            base = tip(repo.path, view["destination"]["branch"]["name"])
            view["source"]["commit"]["hash"] = (head or "")[:12]
            view["destination"]["commit"]["hash"] = (base or "")[:12]
        return view

    def _list(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        wanted = query.get("state", "OPEN")
        items = [p for _, p in sorted(repo.pulls.items()) if p["state"] == wanted]
        for field_name, value in re.findall(r'(\w+)\.branch\.name = "([^"]*)"', query.get("q", "")):
            items = [p for p in items if p[field_name]["branch"]["name"] == value]
        size, page = int(query.get("pagelen", 10)), int(query.get("page", 1))
        chunk = items[(page - 1) * size : page * size]
        answer: dict[str, Any] = {
            "pagelen": size,
            "page": page,
            "size": len(items),
            "values": [self._view(repo, p) for p in chunk],
        }
        if page * size < len(items):
            answer["next"] = f"{self.url}/2.0/repositories/{name}/pullrequests?page={page + 1}"
        return 200, answer, {}

    def _create(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        head = ((body.get("source") or {}).get("branch") or {}).get("name", "")
        base = ((body.get("destination") or {}).get("branch") or {}).get("name", "")
        head_sha, base_sha = tip(repo.path, head), tip(repo.path, base)
        if head_sha is None or base_sha is None:
            return self.error(
                400, f"source: branch not found: {head if head_sha is None else base}"
            )
        for pr in repo.pulls.values():
            if pr["state"] == "OPEN" and (
                pr["source"]["branch"]["name"],
                pr["destination"]["branch"]["name"],
            ) == (head, base):
                return 200, self._view(repo, pr), {}  # Cloud answers with the open one
        if is_ancestor(repo.path, head_sha, base_sha):
            return self.error(400, "There are no changes to be pulled")
        number = len(repo.pulls) + 1
        pr = copy.deepcopy(self._template)
        html = f"{self.url}/{name}/pull-requests/{number}"
        pr.update(
            id=number,
            title=body.get("title", ""),
            description=body.get("description", ""),
            state="OPEN",
            created_on=_now(),
            updated_on=_now(),
            merge_commit=None,
            closed_by=None,
            participants=[],
            reviewers=[],
            close_source_branch=bool(body.get("close_source_branch")),
        )
        pr["links"]["html"]["href"] = html
        pr["author"].update(display_name="Promoter Bot", nickname=self.user)
        pr["source"]["branch"]["name"] = head
        pr["destination"]["branch"]["name"] = base
        for side in ("source", "destination"):
            pr[side]["repository"].update(full_name=name, name=name.split("/")[1])
        repo.pulls[number] = pr
        return 201, self._view(repo, pr), {}

    def _pull(self, repo: Repo, number: str) -> dict[str, Any] | None:
        return repo.pulls.get(int(number))

    def _get(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        return (200, self._view(repo, pr), {}) if pr else self.error(404, f"pull request {n}")

    def _edit(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self.error(404, f"pull request {n}")
        for key in ("title", "description"):
            if key in body:
                pr[key] = body[key]
        pr["updated_on"] = _now()
        return 200, self._view(repo, pr), {}

    def _close(self, repo: Repo, pr: dict[str, Any], state: str) -> None:
        """The pull request ends: its head is kept as it was."""
        pr["source"]["commit"]["hash"] = (tip(repo.path, pr["source"]["branch"]["name"]) or "")[:12]
        pr.update(state=state, updated_on=_now(), closed_by=copy.deepcopy(pr["author"]))

    def _merge(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self.error(404, f"pull request {n}")
        if pr["state"] != "OPEN":
            return self.error(400, f"You can't merge a pull request that is {pr['state'].lower()}")
        strategy = body.get("merge_strategy", "merge_commit")
        if strategy not in STRATEGIES:
            return self.error(400, f"merge_strategy: {strategy} is not allowed")
        head = tip(repo.path, pr["source"]["branch"]["name"])
        before = tip(repo.path, pr["destination"]["branch"]["name"])
        assert head is not None and before is not None
        made = merge(
            repo.path,
            base_branch=pr["destination"]["branch"]["name"],
            head=head,
            how=STRATEGIES[strategy],
            message=body.get("message") or f"Merged in {pr['source']['branch']['name']}",
        )
        if made is None:
            if strategy == "fast_forward":
                return self.error(400, "Unable to fast forward due changes in destination branch.")
            return self.error(400, "You can't merge until you resolve all merge conflicts.")
        self._close(repo, pr, "MERGED")
        pr["merge_commit"] = {"hash": made[:12], "links": {}}
        if self.on_push is not None:
            self.on_push(name, pr["destination"]["branch"]["name"], before, made)
        return 200, self._view(repo, pr), {}

    def _decline(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self.error(404, f"pull request {n}")
        if pr["state"] != "OPEN":
            return self.error(400, f"The pull request is {pr['state'].lower()}")
        self._close(repo, pr, "DECLINED")
        return 200, self._view(repo, pr), {}

    def _comment(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        if self._pull(repo, n) is None:
            return self.error(404, f"pull request {n}")
        text = str((body.get("content") or {}).get("raw") or "")
        repo.comments.setdefault(int(n), []).append(text)
        return 201, {"id": len(repo.comments[int(n)]), "content": {"raw": text}}, {}

    def _commit(self, repo: Repo, name: str, body: Any, q: dict[str, str], sha: str) -> Answer:
        try:
            full = git(repo.path, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
        except RuntimeError:
            return self.error(404, f"Commit not found: {sha}")
        return 200, {"hash": full, "type": "commit"}, {}

    # --- statuses: the genuine build status object, filled in ---------------------------

    def _statuses(self, repo: Repo, name: str, body: Any, q: dict[str, str], sha: str) -> Answer:
        items = list(repo.statuses.get(sha, {}).values())
        size, page = int(q.get("pagelen", 10)), int(q.get("page", 1))
        answer: dict[str, Any] = {
            "pagelen": size,
            "page": page,
            "size": len(items),
            "values": copy.deepcopy(items[(page - 1) * size : page * size]),
        }
        if page * size < len(items):
            answer["next"] = (
                f"{self.url}/2.0/repositories/{name}/commit/{sha}/statuses?page={page + 1}"
            )
        return 200, answer, {}

    def _set_status(self, repo: Repo, name: str, body: Any, q: dict[str, str], sha: str) -> Answer:
        if body.get("state") not in ("SUCCESSFUL", "FAILED", "INPROGRESS", "STOPPED"):
            return self.error(400, "state: not a valid state")
        if not body.get("key") or not body.get("url"):
            return self.error(400, "key and url are required")
        status = copy.deepcopy(self._status)
        kept = repo.statuses.setdefault(sha, {})
        created = kept.get(body["key"], {}).get("created_on", _now())
        status.update(
            key=body["key"],
            state=body["state"],
            name=body.get("name", ""),
            description=body.get("description", ""),
            url=body["url"],
            created_on=created,
            updated_on=_now(),
        )
        status["commit"]["hash"] = sha
        status["repository"].update(full_name=name, name=name.split("/")[1])
        kept[body["key"]] = status
        return 201, copy.deepcopy(status), {}

    # --- people --------------------------------------------------------------------------

    def _participate(self, full_name: str, number: int, user: str, **what: Any) -> None:
        with self.lock:
            pr = self.repos[full_name].pulls[number]
            pr["participants"] = [p for p in pr["participants"] if p["user"]["nickname"] != user]
            pr["participants"].append(
                {
                    "type": "participant",
                    "user": {"display_name": user.title(), "nickname": user, "type": "user"},
                    "role": "PARTICIPANT",
                    "participated_on": _now(),
                    **what,
                }
            )

    def approve(self, full_name: str, number: int, user: str) -> None:
        self._participate(full_name, number, user, approved=True, state="approved")

    def request_changes(self, full_name: str, number: int, user: str) -> None:
        self._participate(full_name, number, user, approved=False, state="changes_requested")

    def person_merges(self, full_name: str, number: int) -> dict[str, Any]:
        status, answer, _ = self.handle(
            "POST",
            f"/2.0/repositories/{full_name}/pullrequests/{number}/merge",
            {"authorization": next(iter(self.credentials))},
            b"{}",
        )
        assert status == 200, answer
        result: dict[str, Any] = answer
        return result

    def person_declines(self, full_name: str, number: int) -> None:
        with self.lock:
            repo = self.repos[full_name]
            self._close(repo, repo.pulls[number], "DECLINED")
