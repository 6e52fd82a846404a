"""Reviewers of a GitLab merge request: users by username, and the members of groups.

GitLab takes reviewers as user ids, so each username is looked up once
(``GET /users?username=``) and each group's members once (``GET /groups/:id/members``),
both kept for the plugin's life; the MR is read (its reviewers already there stay) and
updated with the union (``PUT /projects/:id/merge_requests/:iid`` ``reviewer_ids``).
Calls: 2 per MR, plus 1 per user or group the first time. A username GitLab does not know
is refused (``ScmConflict``), so the promoter reports it and does not ask again.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

import gitlab
from gitlab.v4.objects import Project

from promoter.errors import ScmConflict
from scm_plugins.calls import ScmCalls


class GitLabReviewers:
    def __init__(self, *, calls: ScmCalls, gl: gitlab.Gitlab) -> None:
        self._calls = calls
        self._gl = gl
        self._ids: dict[str, int] = {}
        self._members: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def request(
        self, project: Project, *, number: int, users: Collection[str], groups: Collection[str]
    ) -> None:
        wanted = [self._user(u) for u in users]
        for group in groups:
            wanted.extend(self._group(group))
        with self._calls.call("get_pull_request", pr=number):
            mr: Any = project.mergerequests.get(number)
        present = [int(r["id"]) for r in mr.attributes.get("reviewers") or []]
        ids = list(dict.fromkeys([*present, *wanted]))
        with self._calls.call("request_reviewers", pr=number):
            project.mergerequests.update(number, {"reviewer_ids": ids})

    def _user(self, username: str) -> int:
        with self._lock:
            known = self._ids.get(username)
        if known is not None:
            return known
        with self._calls.call("get_user", user=username):
            found: Any = self._gl.users.list(username=username, get_all=False)
        if not found:
            raise ScmConflict(f"GitLab has no user {username!r}", lasting=True)
        with self._lock:
            self._ids[username] = int(found[0].id)
        return int(found[0].id)

    def _group(self, path: str) -> tuple[int, ...]:
        with self._lock:
            known = self._members.get(path)
        if known is not None:
            return known
        with self._calls.call("get_group_members", group=path):
            members: Any = self._gl.groups.get(path, lazy=True).members.list(get_all=True)
        found = tuple(int(m.id) for m in members)
        with self._lock:
            self._members[path] = found
        return found
