"""A stateful fake of the GitLab REST API (v4) at the HTTP level, backed by real git.

It answers the endpoints the GitLab plugin uses, through ``responses``: merge
requests (list, create, get, update, merge, notes), commit statuses (list,
create) and pipelines (list). Bodies start from the genuine GitLab payloads in
``tests/fixtures/gitlab/rest`` with the fake's values filled in. Each
project is a bare git repository: an MR's head is its source branch, and a
merge is a real merge commit (the source's tree, parents target + source)
moved onto the target with ``update-ref`` guarded by the old value.

Behaviour copied from GitLab: 401 without the right ``PRIVATE-TOKEN``; 409
"Another open merge request already exists" for a second open MR per
source/target; 409 "SHA does not match HEAD of source branch" when the merge
``sha`` is not the head; drafts refused (405 by default); 400 "Cannot transition
status" for pending -> pending; statuses on a SHA with no pipeline create an
``external`` pipeline; with "Pipelines must succeed" (``pipelines_must_succeed``) a
merge whose head's latest pipeline did not succeed is refused (405). CI pipelines are set
by the test (``add_pipeline``); a status set on a commit joins its latest pipeline.
``fail_next`` injects one-off answers (429 with ``Retry-After``, 5xx, ...).

Usage::

    fake = FakeGitLab(fixtures=genuine_fixtures, token="glpat-...")
    fake.add_project("group/app", git_dir=bare_repo, project_id=42)
    with fake:            # activates a responses.RequestsMock for the fake's URL
        ...
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import requests
import responses

from tests.scm_gitlab import fake_gitlab_deployments, fake_gitlab_people, fake_gitlab_trains
from tests.scm_gitlab.fake_gitlab_routes import json_answer, now, route

Answer = tuple[int, dict[str, str], str]
ACTIVE = ("pending", "running")
DRAFT_PREFIX = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:)", re.IGNORECASE)


@dataclass
class FakeProject:
    id: int
    path: str
    git_dir: Path
    mrs: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    pipelines: list[dict[str, Any]] = field(default_factory=list)
    deployments: list[dict[str, Any]] = field(default_factory=list)
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    train: dict[int, dict[str, Any]] = field(default_factory=dict)
    merge_trains: bool = False
    """The project runs merge trains (and merged results pipelines, which they need)."""
    pipelines_must_succeed: bool = False
    """"Pipelines must succeed" (``only_allow_merge_if_pipeline_succeeds``): a merge is
    refused (405) unless the head's latest pipeline succeeded."""

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def head(self, branch: str) -> str | None:
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        except subprocess.CalledProcessError:
            return None


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    answer: Answer
    times: int


class FakeGitLab:
    """GitLab's REST API for a few projects, in memory and in local bare repositories."""

    def __init__(
        self,
        *,
        fixtures: Path,
        url: str = "https://gitlab.example.com",
        token: str = "glpat-fake-token-0123456789",
        draft_refusal_status: int = 405,
    ) -> None:
        rest = fixtures / "gitlab" / "rest"
        self.templates = {
            "mr": _load(rest / "go-gitlab" / "get_merge_request.json"),
            "status": _load(rest / "drone-go-scm" / "status.json"),
            "pipeline": _load(rest / "python-gitlab" / "test_pipelines.pipeline_content.json"),
            "note": _load(rest / "drone-go-scm" / "merge_note.json"),
            "deployment": fake_gitlab_deployments.template(fixtures),
            "train": fake_gitlab_trains.template(fixtures),
            "project": fake_gitlab_trains.project_template(fixtures),
        }
        self.url = url.rstrip("/")
        self.token = token
        self.draft_refusal_status = draft_refusal_status
        self.projects: dict[str, FakeProject] = {}
        self.requests: list[tuple[str, str]] = []
        """(method, path with query) of every request received, in order."""
        self.answered: list[tuple[float, str, str, int]] = []
        """(monotonic time, method, path with query, status) of every answer, in order."""
        self.rate_limit_remaining = 2000
        self.on_status: Callable[[FakeProject, str], None] | None = None
        """Called after a commit status is set: how GitLab sends the Pipeline Hook of the
        commit's external pipeline (the test delivers it to the daemon)."""
        self.on_push: Callable[[FakeProject, str, str, str], None] | None = None
        """Called after a merge moved a branch (project, branch, before, after): how
        GitLab sends its Push Hook."""
        self._faults: list[_Fault] = []
        self.ids = itertools.count(1000)
        self.users: dict[str, int] = {}
        """Usernames GitLab knows, with their ids (``add_user``)."""
        self.groups: dict[str, list[str]] = {}
        """Group paths and their members' usernames."""
        self._lock = threading.RLock()
        self._mock: responses.RequestsMock | None = None

    # --- set-up --------------------------------------------------------------------------

    def add_project(
        self, path: str, *, git_dir: Path, project_id: int | None = None
    ) -> FakeProject:
        project = FakeProject(id=project_id or next(self.ids), path=path, git_dir=git_dir)
        self.projects[path] = project
        return project

    def install(self, mock: responses.RequestsMock) -> None:
        """Answer this fake's URL through ``mock`` (loopback passes through)."""
        for method in ("GET", "POST", "PUT", "DELETE"):
            mock.add_callback(method, re.compile(re.escape(self.url) + r"/.*"), self._dispatch)
        mock.add_passthru(re.compile(r"https?://(127\.0\.0\.1|localhost|\[::1\])[:/]"))

    def __enter__(self) -> FakeGitLab:
        self._mock = responses.RequestsMock(assert_all_requests_are_fired=False)
        self.install(self._mock)
        self._mock.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._mock is not None
        self._mock.stop()
        self._mock.reset()
        self._mock = None

    # --- what tests change and look at ------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_pattern: str,
        status: int,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status``.

        ``path_pattern`` is searched in the path after ``/api/v4``.
        """
        text = json.dumps(body if body is not None else {"message": f"{status} fake failure"})
        self._faults.append(
            _Fault(method.upper(), re.compile(path_pattern), (status, headers or {}, text), times)
        )

    def add_pipeline(
        self, path: str, sha: str, status: str, *, ref: str = "main", source: str = "push"
    ) -> dict[str, Any]:
        """A CI pipeline for ``sha`` (newest last); change it with ``pipeline[...] = ...``."""
        with self._lock:
            project = self.projects[path]
            pipeline = copy.deepcopy(self.templates["pipeline"])
            pid = next(self.ids)
            pipeline.update(
                id=pid,
                iid=pid,
                project_id=project.id,
                sha=sha,
                ref=ref,
                status=status,
                source=source,
                created_at=now(),
                updated_at=now(),
                web_url=f"{self.url}/{path}/-/pipelines/{pid}",
            )
            project.pipelines.append(pipeline)
            return pipeline

    def add_status(
        self, path: str, sha: str, name: str, status: str, *, allow_failure: bool = False
    ) -> dict[str, Any]:
        """A commit status as CI (a job) or another tool would leave it."""
        with self._lock:
            return self.new_status(self.projects[path], sha, name, status, allow_failure, {})

    def merge_requests(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            project = self.projects[path]
            return [self.render_mr(project, mr) for mr in project.mrs.values()]

    def set_draft(self, path: str, iid: int, draft: bool = True) -> None:
        with self._lock:
            self.projects[path].mrs[iid]["draft"] = draft

    # --- dispatch ---------------------------------------------------------------------------

    def _dispatch(self, request: requests.PreparedRequest) -> Answer:
        with self._lock:
            status, headers, body = self._answer(request)
            self.answered.append((time.monotonic(), *self.requests[-1], status))
            self.rate_limit_remaining = max(0, self.rate_limit_remaining - 1)
            headers = {
                "Content-Type": "application/json",
                "RateLimit-Limit": "2000",
                "RateLimit-Remaining": str(self.rate_limit_remaining),
                **headers,
            }
            return status, headers, body

    def _answer(self, request: requests.PreparedRequest) -> Answer:
        parts = urlsplit(str(request.url))
        prefix = urlsplit(self.url).path + "/api/v4"
        path = parts.path[len(prefix) :] if parts.path.startswith(prefix) else parts.path
        method = str(request.method)
        self.requests.append((method, path + (f"?{parts.query}" if parts.query else "")))
        if request.headers.get("PRIVATE-TOKEN") != self.token:
            return json_answer(401, {"message": "401 Unauthorized"})
        for fault in self._faults:
            if fault.method == method and fault.pattern.search(path) and fault.times > 0:
                fault.times -= 1
                return fault.answer
        params: dict[str, Any] = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if request.body:
            params.update(json.loads(request.body))
        segments = [unquote(s) for s in path.strip("/").split("/")]
        people = fake_gitlab_people.route(self, method, segments, params)
        if people is not None:
            return people
        if len(segments) < 2 or segments[0] != "projects":
            return json_answer(404, {"message": "404 Not Found"})
        project = self._project(segments[1])
        if project is None:
            return json_answer(404, {"message": "404 Project Not Found"})
        for extra in (fake_gitlab_deployments.route, fake_gitlab_trains.route):
            answer = extra(self, project, method, segments[2:], params)
            if answer is not None:
                return answer
        return route(self, project, method, segments[2:], params)

    def _project(self, ref: str) -> FakeProject | None:
        for project in self.projects.values():
            if ref in (project.path, str(project.id)):
                return project
        return None

    # --- shared by the routes ----------------------------------------------------------------

    def add_user(self, username: str) -> int:
        return self.users.setdefault(username, next(self.ids))

    def render_mr(self, project: FakeProject, mr: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(self.templates["mr"])
        head = project.head(mr["source_branch"]) if mr["state"] == "opened" else None
        sha = head or mr["sha"]
        draft = bool(mr["draft"] or DRAFT_PREFIX.match(mr["title"]))
        body.update(mr)
        body.update(
            project_id=project.id,
            source_project_id=project.id,
            target_project_id=project.id,
            sha=sha,
            draft=draft,
            work_in_progress=draft,
            detailed_merge_status="draft_status" if draft else "mergeable",
            merge_status="can_be_merged",
            has_conflicts=False,
            pipeline=None,
            head_pipeline=None,
            reference=f"!{mr['iid']}",
            web_url=f"{self.url}/{project.path}/-/merge_requests/{mr['iid']}",
            diff_refs={"base_sha": None, "head_sha": sha, "start_sha": None},
            user={"can_merge": True},
            reviewers=fake_gitlab_people.users_of(self, mr.get("reviewer_ids") or []),
        )
        return body

    def new_status(
        self,
        project: FakeProject,
        sha: str,
        name: str,
        status: str,
        allow_failure: bool,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        entry = copy.deepcopy(self.templates["status"])
        entry.update(
            id=next(self.ids),
            sha=sha,
            name=name,
            status=status,
            allow_failure=allow_failure,
            ref=params.get("ref"),
            description=params.get("description"),
            target_url=params.get("target_url"),
            created_at=now(),
            started_at=None,
            finished_at=None if status in ACTIVE else now(),
        )
        project.statuses.append(entry)
        return entry


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded
