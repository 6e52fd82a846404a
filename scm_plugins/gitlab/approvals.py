"""Approvals of a GitLab merge request, for the approval gate.

``GET /projects/:id/merge_requests/:iid/approvals`` lists who approved; a group asked
about is checked with ``GET /groups/:group/members/all/:user_id`` per approver.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import gitlab
from gitlab.v4.objects import Project

from promoter.errors import ScmNotFound
from promoter.models import Review
from scm_plugins.calls import ScmCalls


def approvers(data: dict[str, Any]) -> list[tuple[str, int | None, str]]:
    """``(username, user id, display name)`` of everyone in an approvals answer's
    ``approved_by`` (the name is matched against the change's git authors)."""
    found = []
    for item in data.get("approved_by") or []:
        user = item.get("user") or {}
        if user.get("username"):
            found.append((str(user["username"]), user.get("id"), str(user.get("name") or "")))
    return found


class Approvals:
    """The approvals half of the GitLab plugin."""

    def __init__(self, *, calls: ScmCalls, gl: gitlab.Gitlab) -> None:
        self._calls = calls
        self._gl = gl

    def get(self, project: Project, *, number: int, groups: Collection[str]) -> list[Review]:
        with self._calls.call("get_reviews", pr=number):
            answer = project.mergerequests.get(number, lazy=True).approvals.get()
        reviews = []
        for username, user_id, name in approvers(dict(answer.attributes)):
            member_of = tuple(g for g in groups if user_id and self._member(g, user_id))
            reviews.append(Review(user=username, approved=True, teams=member_of, name=name))
        return reviews

    def _member(self, group: str, user_id: int) -> bool:
        try:
            with self._calls.call("get_group_member", group=group):
                self._gl.groups.get(group, lazy=True).members_all.get(user_id)
        except ScmNotFound:
            return False
        return True
