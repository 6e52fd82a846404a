"""The fake GitLab's users and groups: ``GET /users?username=`` and
``GET /groups/:id/members``, with the user objects GitLab returns (a reviewer of
go-gitlab's recorded merge request, ``rest/go-gitlab/get_merge_request.json``)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from tests.scm_gitlab.fake_gitlab_routes import json_answer

if TYPE_CHECKING:
    from tests.scm_gitlab.fake_gitlab import Answer, FakeGitLab


def user(fake: FakeGitLab, username: str) -> dict[str, Any]:
    body = copy.deepcopy(fake.templates["mr"]["reviewers"][0])
    body.update(
        id=fake.users[username],
        username=username,
        name=username.title(),
        web_url=f"{fake.url}/{username}",
    )
    return body


def users_of(fake: FakeGitLab, ids: list[int]) -> list[dict[str, Any]]:
    names = {v: k for k, v in fake.users.items()}
    return [user(fake, names[i]) for i in ids if i in names]


def route(
    fake: FakeGitLab, method: str, segments: list[str], params: dict[str, Any]
) -> Answer | None:
    match method, segments:
        case "GET", ["users"]:
            name = str(params.get("username", ""))
            return json_answer(200, [user(fake, name)] if name in fake.users else [])
        case "GET", ["groups", group, "members"]:
            if group not in fake.groups:
                return json_answer(404, {"message": "404 Group Not Found"})
            members = [{**user(fake, n), "access_level": 30} for n in fake.groups[group]]
            return json_answer(200, members, {"X-Total-Pages": "1", "X-Page": "1"})
    return None
