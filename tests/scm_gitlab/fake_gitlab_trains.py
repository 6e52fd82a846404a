"""The fake GitLab's merge trains (``/projects/:id/merge_trains/merge_requests/:iid``) and
the project's settings that turn them on (``GET /projects/:id``).

Entries start from the merge train example python-gitlab's tests use
(``rest/python-gitlab/test_merge_trains.mr_content.json``); the project from the example
of GitLab's "Retrieve a project" (``rest/gitlab-docs/projects.get.jsonc``, its comments
left out), with the project's ``merge_trains_enabled`` and ``merge_pipelines_enabled``
set. As GitLab does: adding an MR
whose source head is not ``sha`` is refused (409), as is a closed or merged one (405);
an MR not on the train answers 404. ``drop`` takes an MR off (its train pipeline failed);
``merge`` merges it as the train does (a real merge commit, the Push Hook after).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.scm_gitlab import fake_gitlab_routes as routes

if TYPE_CHECKING:
    from tests.scm_gitlab.fake_gitlab import Answer, FakeGitLab, FakeProject


def template(fixtures: Path) -> dict[str, Any]:
    path = fixtures / "gitlab" / "rest" / "python-gitlab" / "test_merge_trains.mr_content.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def project_template(fixtures: Path) -> dict[str, Any]:
    text = (fixtures / "gitlab" / "rest" / "gitlab-docs" / "projects.get.jsonc").read_text()
    loaded: dict[str, Any] = json.loads(re.sub(r"(?m)\s//[^\"\n]*$", "", text))
    return loaded


def route(
    fake: FakeGitLab, project: FakeProject, method: str, rest: list[str], params: dict[str, Any]
) -> Answer | None:
    match method, rest:
        case "GET", []:
            body = copy.deepcopy(fake.templates["project"])
            body.update(
                id=project.id,
                path_with_namespace=project.path,
                merge_pipelines_enabled=project.merge_trains,
                merge_trains_enabled=project.merge_trains,
            )
            return routes.json_answer(200, body)
        case "POST", ["merge_trains", "merge_requests", iid]:
            return add(fake, project, int(iid), params)
        case "GET", ["merge_trains", "merge_requests", iid]:
            car = project.train.get(int(iid))
            if car is None:
                return routes.json_answer(404, {"message": "404 Merge Train Not Found"})
            return routes.json_answer(200, car)
    return None


def add(fake: FakeGitLab, project: FakeProject, iid: int, params: dict[str, Any]) -> Answer:
    mr = project.mrs.get(iid)
    if mr is None:
        return routes.json_answer(404, {"message": "404 Not Found"})
    if mr["state"] != "opened":
        return routes.json_answer(405, {"message": "405 Method Not Allowed"})
    head = project.head(mr["source_branch"])
    if params.get("sha") and params["sha"] != head:
        return routes.json_answer(
            409, {"message": f"SHA does not match HEAD of source branch: {head}"}
        )
    car = copy.deepcopy(fake.templates["train"])
    car.update(
        id=next(fake.ids),
        target_branch=mr["target_branch"],
        status="idle",
        merged_at=None,
        created_at=routes.now(),
        updated_at=routes.now(),
    )
    car["merge_request"].update(id=mr["id"], iid=iid, project_id=project.id, state="opened")
    car["pipeline"].update(status="running", sha=head, ref=f"refs/merge-requests/{iid}/train")
    project.train[iid] = car
    return routes.json_answer(201, list(project.train.values()))


def drop(project: FakeProject, iid: int) -> None:
    """The train's pipeline failed: GitLab takes the MR off the train."""
    project.train.pop(iid)


def merge(fake: FakeGitLab, project: FakeProject, iid: int) -> None:
    """The train's pipeline passed: GitLab merges the MR."""
    project.train.pop(iid)
    routes.merge_mr(fake, project, iid, {})
