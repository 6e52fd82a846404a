"""The fake GitLab's deployments (``/projects/:id/deployments``): create, update, list.

Bodies start from the "Get a specific deployment" example python-gitlab's tests use
(``rest/python-gitlab/test_deployments.response_get_content.json``). As GitLab does: an
environment is made the first time a deployment names it; a deployment needs
``environment``, ``sha`` and ``ref`` (400 otherwise) and a status GitLab knows (400); an
update of a deployment the project does not have is 404.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.scm_gitlab.fake_gitlab_routes import json_answer, now

if TYPE_CHECKING:
    from tests.scm_gitlab.fake_gitlab import Answer, FakeGitLab, FakeProject

STATUSES = ("created", "running", "success", "failed", "canceled", "skipped", "blocked")


def template(fixtures: Path) -> dict[str, Any]:
    path = (
        fixtures
        / "gitlab"
        / "rest"
        / "python-gitlab"
        / "test_deployments.response_get_content.json"
    )
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def route(
    fake: FakeGitLab, project: FakeProject, method: str, rest: list[str], params: dict[str, Any]
) -> Answer | None:
    """Answer a deployments request, or None when it is not one."""
    match method, rest:
        case "POST", ["deployments"]:
            return create(fake, project, params)
        case "PUT", ["deployments", deployment_id]:
            return update(project, int(deployment_id), params)
        case "GET", ["deployments"]:
            found = [
                d
                for d in project.deployments
                if params.get("environment") in (None, d["environment"]["name"])
            ]
            return json_answer(200, found)
    return None


def create(fake: FakeGitLab, project: FakeProject, params: dict[str, Any]) -> Answer:
    missing = [k for k in ("environment", "sha", "ref") if not params.get(k)]
    if missing:
        return json_answer(400, {"message": f"400 Bad request - {', '.join(missing)} is missing"})
    status = params.get("status", "created")
    if status not in STATUSES:
        return json_answer(400, {"message": "400 Bad request - status does not have a valid value"})
    name = str(params["environment"])
    environment = project.environments.setdefault(
        name, {"id": next(fake.ids), "name": name, "external_url": None}
    )
    deployment = copy.deepcopy(fake.templates["deployment"])
    deployment_id = next(fake.ids)
    deployment.update(
        id=deployment_id,
        iid=len(project.deployments) + 1,
        ref=params["ref"],
        sha=params["sha"],
        status=status,
        environment=dict(environment),
        deployable=None,
        created_at=now(),
        updated_at=now(),
    )
    project.deployments.append(deployment)
    return json_answer(201, deployment)


def update(project: FakeProject, deployment_id: int, params: dict[str, Any]) -> Answer:
    deployment = next((d for d in project.deployments if d["id"] == deployment_id), None)
    if deployment is None:
        return json_answer(404, {"message": "404 Deployment Not Found"})
    if params.get("status") not in STATUSES:
        return json_answer(400, {"message": "400 Bad request - status does not have a valid value"})
    deployment.update(status=params["status"], updated_at=now())
    return json_answer(200, deployment)
