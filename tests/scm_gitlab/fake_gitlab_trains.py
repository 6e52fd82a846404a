"""The fake GitLab's merge trains (``/projects/:id/merge_trains/merge_requests/:iid``) and
the project's settings that turn them on (``GET /projects/:id``).

Entries start from the merge train example python-gitlab's tests use
(``rest/python-gitlab/test_merge_trains.mr_content.json``); the project from the example
of GitLab's "Retrieve a project" (``rest/gitlab-docs/projects.get.jsonc``, its comments
left out), with the project's ``merge_trains_enabled`` and ``merge_pipelines_enabled``
set. As GitLab does: adding an MR
whose source head is not ``sha`` is refused (409), as is a closed or merged one (405);
an MR not on the train answers 404, and a new commit on its source branch takes it off.
``POST /merge_requests/:iid/cancel_merge_when_pipeline_succeeds`` takes it off the train
(GitLab's "Cancel auto-merge"); it answers 201 with GitLab's service result, as GitLab does
(``{"status": "success"}``, or ``{"status": "error", "message": "Can't cancel the automatic
merge", "http_status": 406}`` when there is nothing to cancel, the MR merged or closed),
though GitLab's page documents 406 for a closed MR and the MR itself as the body.
``drop`` takes an MR off (its train pipeline failed); ``merge`` merges it as the train
does (a real merge commit, the Push Hook after); ``pipeline_done`` ends the train's
pipeline of an MR, and the train merges it or drops it.
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
        case "POST", ["merge_requests", iid, "cancel_merge_when_pipeline_succeeds"]:
            return cancel(project, int(iid))
        case "GET", ["merge_trains", "merge_requests", iid]:
            drop_moved(project)
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


def cancel(project: FakeProject, iid: int) -> Answer:
    """Cancel auto-merge: off the train; GitLab's service result as the 201's body."""
    if iid not in project.mrs:
        return routes.json_answer(404, {"message": "404 Not Found"})
    drop_moved(project)
    if project.train.pop(iid, None) is None:
        refused = {"status": "error", "message": "Can't cancel the automatic merge"}
        return routes.json_answer(201, {**refused, "http_status": 406})
    return routes.json_answer(201, {"status": "success"})


def drop_moved(project: FakeProject) -> None:
    """A new commit on an MR's source branch cancels its auto-merge: off the train."""
    for iid, car in list(project.train.items()):
        mr = project.mrs[iid]
        if project.head(mr["source_branch"]) != car["pipeline"]["sha"]:
            project.train.pop(iid)


def pipeline_done(fake: FakeGitLab, project: FakeProject, iid: int, status: str) -> None:
    """The train's pipeline of MR ``iid`` ended: passed, the train merges it; else off it."""
    drop_moved(project)
    if iid not in project.train:
        return
    if status == "success":
        merge(fake, project, iid)
    else:
        drop(project, iid)
