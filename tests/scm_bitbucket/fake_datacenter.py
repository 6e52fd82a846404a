"""A stateful fake of Bitbucket Data Center's REST API on 127.0.0.1, under a context path
(``/bitbucket``), over real bare git repositories (served to git by their path).

Pull requests are the genuine object of ``tests/fixtures/bitbucket-datacenter/rest/pr.json``
with their fields filled in; errors follow ``rest/error.json``. Data Center's rules the plugin
meets: a pull request's ``version`` grows with each change (an edit, a push to its source
branch), and an update, merge or decline naming another version is refused with 409
(``PullRequestOutOfDateException``); one open pull request per source and target, a second
refused with 409 naming the first (``DuplicatePullRequestException``); a merge with a
conflict is vetoed (409); merge strategies ``no-ff``, ``ff``, ``ff-only``, ``squash``; build
statuses under both APIs (``legacy_only``: a server older than 7.4 has only
``/rest/build-status/1.0``); 429 with ``Retry-After`` (``limit_for``); the bearer token
checked. People act through ``person_merges``, ``person_declines``, ``review``.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fixture_paths import FIXTURES
from tests.scm_bitbucket import fake_datacenter_builds as builds_api
from tests.scm_bitbucket.fake_http import Answer, FakeServer, has_commit, is_ancestor, merge, tip

GENUINE = FIXTURES / "bitbucket-datacenter"
CONTEXT = "/bitbucket"
STRATEGIES = {"no-ff": "merge", "ff": "ff", "ff-only": "ff-only", "squash": "squash"}
EXCEPTIONS = "com.atlassian.bitbucket.pull."


def _ms() -> int:
    return int(time.time() * 1000)


def _genuine(name: str) -> Any:
    return json.loads((GENUINE / name).read_text())


@dataclass
class Repo:
    path: Path
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    builds: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[str]] = field(default_factory=dict)


class FakeDataCenter(FakeServer):
    def __init__(self, *, token: str, user: str = "promoter-bot", retry_after: int = 1) -> None:
        super().__init__()
        self.token = token
        self.user = user
        self.retry_after = retry_after
        self.legacy_only = False
        self.repos: dict[str, Repo] = {}
        self._template = _genuine("rest/pr.json")

    @property
    def base_url(self) -> str:
        """The instance's URL, with its context path."""
        return self.url + CONTEXT

    def __enter__(self) -> FakeDataCenter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_repository(self, full_name: str, path: Path) -> None:
        """``full_name``: ``PROJECT/slug``."""
        self.repos[full_name.upper().split("/")[0] + "/" + full_name.split("/")[1]] = Repo(path)

    def pulls_of(self, full_name: str) -> list[dict[str, Any]]:
        repo = self.repos[full_name]
        with self.lock:
            return [self._view(repo, p) for _, p in sorted(repo.pulls.items())]

    # --- the service's rules -----------------------------------------------------------

    def authorized(self, authorization: str, path: str) -> bool:
        return authorization == f"Bearer {self.token}"

    def error(self, status: int, message: str, exception: str = "", **more: Any) -> Answer:
        body = copy.deepcopy(_genuine("rest/error.json"))
        body["errors"][0].update(message=message, exceptionName=exception or None, **more)
        return status, body, {}

    def rate_limited(self) -> Answer:
        status, body, _ = self.error(429, "Too many requests: the rate limit was reached")
        return status, body, {"Retry-After": str(self.retry_after)}

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> Answer:
        if not path.startswith(CONTEXT + "/rest/"):
            return self.error(404, f"no resource at {path}")
        path = path.removeprefix(CONTEXT)
        legacy = re.fullmatch(r"/rest/build-status/1\.0/commits/([0-9a-f]{40})", path)
        if legacy:
            sha = legacy.group(1)
            return builds_api.answer(self, method, self._repo_of(sha).builds, sha, query, body)
        match = re.fullmatch(r"/rest/api/latest/projects/([^/]+)/repos/([^/]+)(/.*)", path)
        if match is None:
            return self.error(404, f"no resource at {path}")
        name = f"{match.group(1).upper()}/{match.group(2)}"
        if name not in self.repos:
            return self.error(
                404,
                f"Repository {name} does not exist.",
                "com.atlassian.bitbucket.repository.NoSuchRepositoryException",
            )
        repo, rest = self.repos[name], match.group(3)
        found_builds = re.fullmatch(r"/commits/([0-9a-f]{40})/builds", rest)
        if found_builds:
            if self.legacy_only:
                return self.error(404, f"no resource at {path}")
            return builds_api.answer(self, method, repo.builds, found_builds.group(1), query, body)
        for pattern, verb, handler in (
            (r"/pull-requests", "GET", self._list),
            (r"/pull-requests", "POST", self._create),
            (r"/pull-requests/(\d+)", "GET", self._get),
            (r"/pull-requests/(\d+)", "PUT", self._edit),
            (r"/pull-requests/(\d+)/merge", "POST", self._merge),
            (r"/pull-requests/(\d+)/decline", "POST", self._decline),
            (r"/pull-requests/(\d+)/comments", "POST", self._comment),
        ):
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                result: Answer = handler(repo, name, body or {}, query, *found.groups())
                return result
        return self.error(404, f"no resource at {path}")

    def _repo_of(self, sha: str) -> Repo:
        for repo in self.repos.values():
            if has_commit(repo.path, sha):
                return repo
        return next(iter(self.repos.values()))

    def _view(self, repo: Repo, pr: dict[str, Any]) -> dict[str, Any]:
        """The pull request now: an open one follows its branches (a push bumps its version)."""
        if pr["state"] == "OPEN":
            head = tip(repo.path, pr["fromRef"]["displayId"])
            if head is not None and head != pr["fromRef"]["latestCommit"]:
                pr["fromRef"]["latestCommit"] = head
                pr["version"] += 1  # rescoped
                pr["updatedDate"] = _ms()
            pr["toRef"]["latestCommit"] = tip(repo.path, pr["toRef"]["displayId"]) or ""
        return copy.deepcopy(pr)

    def _list(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        state = query.get("state", "OPEN")
        at = query.get("at", "")
        items = [
            self._view(repo, p)
            for _, p in sorted(repo.pulls.items())
            if (state == "ALL" or p["state"] == state) and (not at or p["fromRef"]["id"] == at)
        ]
        limit, start = int(query.get("limit", 25)), int(query.get("start", 0))
        chunk = items[start : start + limit]
        last = start + limit >= len(items)
        page: dict[str, Any] = {
            "size": len(chunk),
            "limit": limit,
            "start": start,
            "isLastPage": last,
            "values": chunk,
        }
        if not last:
            page["nextPageStart"] = start + limit
        return 200, page, {}

    def _create(self, repo: Repo, name: str, body: Any, query: dict[str, str]) -> Answer:
        head_ref = (body.get("fromRef") or {}).get("id", "")
        base_ref = (body.get("toRef") or {}).get("id", "")
        head, base = head_ref.removeprefix("refs/heads/"), base_ref.removeprefix("refs/heads/")
        head_sha, base_sha = tip(repo.path, head), tip(repo.path, base)
        if head_sha is None or base_sha is None:
            return self.error(404, f"Repository ref {head_ref} does not exist.")
        for pr in repo.pulls.values():
            if pr["state"] == "OPEN" and (pr["fromRef"]["id"], pr["toRef"]["id"]) == (
                head_ref,
                base_ref,
            ):
                return self.error(
                    409,
                    "Only one pull request may be open for a given source and target branch",
                    EXCEPTIONS + "DuplicatePullRequestException",
                    existingPullRequest=self._view(repo, pr),
                )
        if is_ancestor(repo.path, head_sha, base_sha):
            return self.error(
                409,
                f"Repository {name} branch {base} is up-to-date with {head}",
                EXCEPTIONS + "EmptyPullRequestException",
            )
        number = len(repo.pulls) + 1
        pr = copy.deepcopy(self._template)
        pr.update(
            id=number,
            version=0,
            title=body.get("title", ""),
            description=body.get("description", ""),
            state="OPEN",
            open=True,
            closed=False,
            createdDate=_ms(),
            updatedDate=_ms(),
            reviewers=[],
            participants=[],
        )
        pr.pop("properties", None)
        pr["author"]["user"].update(name=self.user, slug=self.user, displayName="Promoter Bot")
        project, slug = name.split("/")
        for side, ref, sha in (("fromRef", head, head_sha), ("toRef", base, base_sha)):
            pr[side].update(id=f"refs/heads/{ref}", displayId=ref, latestCommit=sha)
            pr[side]["repository"].update(slug=slug, name=slug)
            pr[side]["repository"]["project"].update(key=project, name=project)
        pr["links"]["self"][0]["href"] = (
            f"{self.base_url}/projects/{project}/repos/{slug}/pull-requests/{number}"
        )
        repo.pulls[number] = pr
        return 201, self._view(repo, pr), {}

    def _pull(self, repo: Repo, number: str) -> dict[str, Any] | None:
        return repo.pulls.get(int(number))

    def _missing(self, number: str) -> Answer:
        return self.error(
            404, f"Pull request {number} does not exist.", EXCEPTIONS + "NoSuchPullRequestException"
        )

    def _out_of_date(self, pr: dict[str, Any], query: dict[str, str]) -> Answer | None:
        if str(query.get("version", pr["version"])) != str(pr["version"]):
            return self.error(
                409,
                "You are attempting to modify a pull request based on out-of-date information.",
                EXCEPTIONS + "PullRequestOutOfDateException",
                currentVersion=pr["version"],
            )
        return None

    def _get(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        return (200, self._view(repo, pr), {}) if pr else self._missing(n)

    def _edit(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self._missing(n)
        self._view(repo, pr)
        refused = self._out_of_date(pr, {"version": str(body.get("version"))})
        if refused is not None:
            return refused
        for key in ("title", "description"):
            if key in body:
                pr[key] = body[key]
        pr["version"] += 1
        pr["updatedDate"] = _ms()
        return 200, self._view(repo, pr), {}

    def _end(self, pr: dict[str, Any], state: str) -> None:
        pr.update(state=state, open=False, closed=True, closedDate=_ms(), updatedDate=_ms())
        pr["version"] += 1

    def _merge(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self._missing(n)
        self._view(repo, pr)
        if pr["state"] != "OPEN":
            return self.error(
                409,
                f"Pull request {n} is {pr['state'].lower()} and cannot be merged",
                EXCEPTIONS + "IllegalPullRequestStateException",
            )
        refused = self._out_of_date(pr, q)
        if refused is not None:
            return refused
        strategy = body.get("strategyId") or "no-ff"
        if strategy not in STRATEGIES:
            return self.error(400, f"Merge strategy {strategy} is not enabled")
        head = pr["fromRef"]["latestCommit"]
        before = pr["toRef"]["latestCommit"]
        made = merge(
            repo.path,
            base_branch=pr["toRef"]["displayId"],
            head=head,
            how=STRATEGIES[strategy],
            message=body.get("message") or f"Merge pull request #{n}",
        )
        if made is None:
            return self.error(
                409,
                "Merging the pull request has been vetoed.",
                EXCEPTIONS + "PullRequestMergeVetoedException",
                vetoes=[
                    {
                        "summaryMessage": "Merge conflict",
                        "detailedMessage": "The merge has conflicts that must be resolved.",
                    }
                ],
            )
        self._end(pr, "MERGED")
        pr["properties"] = {"mergeCommit": {"id": made, "displayId": made[:11]}}
        if self.on_push is not None:
            self.on_push(name, pr["toRef"]["displayId"], before, made)
        return 200, self._view(repo, pr), {}

    def _decline(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        pr = self._pull(repo, n)
        if pr is None:
            return self._missing(n)
        self._view(repo, pr)
        refused = self._out_of_date(pr, q)
        if refused is not None:
            return refused
        self._end(pr, "DECLINED")
        return 200, self._view(repo, pr), {}

    def _comment(self, repo: Repo, name: str, body: Any, q: dict[str, str], n: str) -> Answer:
        if self._pull(repo, n) is None:
            return self._missing(n)
        repo.comments.setdefault(int(n), []).append(str(body.get("text") or ""))
        return 201, {"id": len(repo.comments[int(n)]), "version": 0, "text": body.get("text")}, {}

    # --- people --------------------------------------------------------------------------

    def review(self, full_name: str, number: int, user: str, status: str = "APPROVED") -> None:
        """``user`` reviews pull request ``number`` on its head (APPROVED, NEEDS_WORK)."""
        with self.lock:
            repo = self.repos[full_name]
            pr = self._view(repo, repo.pulls[number])
            entry = {
                "user": {
                    "name": user,
                    "slug": user,
                    "displayName": user.title(),
                    "emailAddress": f"{user}@example.invalid",
                },
                "lastReviewedCommit": pr["fromRef"]["latestCommit"],
                "role": "REVIEWER",
                "approved": status == "APPROVED",
                "status": status,
            }
            stored = repo.pulls[number]
            stored["reviewers"] = [r for r in stored["reviewers"] if r["user"]["name"] != user]
            stored["reviewers"].append(entry)

    def person_merges(self, full_name: str, number: int) -> dict[str, Any]:
        repo = self.repos[full_name]
        with self.lock:
            version = self._view(repo, repo.pulls[number])["version"]
        project, slug = full_name.split("/")
        status, answer, _ = self.handle(
            "POST",
            f"{CONTEXT}/rest/api/latest/projects/{project}/repos/{slug}/pull-requests/{number}"
            f"/merge?version={version}",
            {"authorization": f"Bearer {self.token}"},
            b"{}",
        )
        assert status == 200, answer
        result: dict[str, Any] = answer
        return result

    def person_declines(self, full_name: str, number: int) -> None:
        with self.lock:
            repo = self.repos[full_name]
            self._view(repo, repo.pulls[number])
            self._end(repo.pulls[number], "DECLINED")
