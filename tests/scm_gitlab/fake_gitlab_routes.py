"""The endpoints of the fake GitLab: merge requests, notes, commit statuses, pipelines.

Each handler takes the fake, the project, the path's remaining segments and the
request's parameters (query and JSON body merged, as Grape does) and returns
``(status, headers, body)``. State lives in ``fake_gitlab.FakeProject``.
"""

from __future__ import annotations

import copy
import json
import subprocess
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.scm_gitlab.fake_gitlab import Answer, FakeGitLab, FakeProject

ACTIVE = ("pending", "running")
VERB = {"pending": "enqueue", "running": "run"}


def now() -> str:
    """A GitLab timestamp for the present moment."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    return status, headers or {}, json.dumps(body)


def _page(items: list[dict[str, Any]], params: dict[str, Any]) -> Answer:
    per_page = int(params.get("per_page", 20))
    page = int(params.get("page", 1))
    chunk = items[(page - 1) * per_page : page * per_page]
    pages = max(1, -(-len(items) // per_page))
    headers = {
        "X-Page": str(page),
        "X-Per-Page": str(per_page),
        "X-Total": str(len(items)),
        "X-Total-Pages": str(pages),
        "X-Next-Page": str(page + 1) if page < pages else "",
        "X-Prev-Page": str(page - 1) if page > 1 else "",
    }
    return json_answer(200, chunk, headers)


def _labels(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [v for v in str(value or "").split(",") if v]


def route(
    fake: FakeGitLab, project: FakeProject, method: str, rest: list[str], params: dict[str, Any]
) -> Answer:
    """Answer one request under ``/projects/:id``."""
    match method, rest:
        case "GET", ["merge_requests"]:
            return list_mrs(fake, project, params)
        case "POST", ["merge_requests"]:
            return create_mr(fake, project, params)
        case "GET", ["merge_requests", iid]:
            mr = project.mrs.get(int(iid))
            return json_answer(200, fake.render_mr(project, mr)) if mr else _not_found()
        case "PUT", ["merge_requests", iid]:
            return update_mr(fake, project, int(iid), params)
        case "PUT", ["merge_requests", iid, "merge"]:
            return merge_mr(fake, project, int(iid), params)
        case "POST", ["merge_requests", iid, "notes"]:
            return create_note(fake, project, int(iid), params)
        case "GET", ["repository", "commits", sha, "statuses"]:
            return list_statuses(project, sha, params)
        case "POST", ["statuses", sha]:
            return create_status(fake, project, sha, params)
        case "GET", ["pipelines"]:
            return list_pipelines(project, params)
    return _not_found()


def _not_found() -> Answer:
    return json_answer(404, {"message": "404 Not Found"})


def list_mrs(fake: FakeGitLab, project: FakeProject, params: dict[str, Any]) -> Answer:
    state = params.get("state", "all")
    found = [
        fake.render_mr(project, mr)
        for mr in sorted(project.mrs.values(), key=lambda m: m["iid"], reverse=True)
        if state in ("all", mr["state"])
        and params.get("source_branch", mr["source_branch"]) == mr["source_branch"]
        and params.get("target_branch", mr["target_branch"]) == mr["target_branch"]
    ]
    return _page(found, params)


def create_mr(fake: FakeGitLab, project: FakeProject, params: dict[str, Any]) -> Answer:
    source, target = params.get("source_branch"), params.get("target_branch")
    if not source or not target or not params.get("title"):
        return json_answer(
            400, {"message": "400 Bad request - source_branch, target_branch, title"}
        )
    if project.head(source) is None or project.head(target) is None:
        return json_answer(400, {"message": ["Source branch or target branch does not exist"]})
    already = [
        m["iid"]
        for m in project.mrs.values()
        if m["state"] == "opened" and (m["source_branch"], m["target_branch"]) == (source, target)
    ]
    if already:
        message = "Another open merge request already exists for this source branch"
        return json_answer(409, {"message": [f"{message}: !{already[0]}"]})
    iid = max(project.mrs, default=0) + 1
    mr = {
        "id": next(fake.ids),
        "iid": iid,
        "title": params["title"],
        "description": params.get("description", ""),
        "state": "opened",
        "source_branch": source,
        "target_branch": target,
        "labels": _labels(params.get("labels")),
        "draft": False,
        "sha": project.head(source),
        "merge_commit_sha": None,
        "squash_commit_sha": None,
        "squash": bool(params.get("squash", False)),
        "force_remove_source_branch": bool(params.get("remove_source_branch", False)),
        "created_at": now(),
        "updated_at": now(),
        "merged_at": None,
        "closed_at": None,
    }
    project.mrs[iid] = mr
    return json_answer(201, fake.render_mr(project, mr))


def update_mr(fake: FakeGitLab, project: FakeProject, iid: int, params: dict[str, Any]) -> Answer:
    mr = project.mrs.get(iid)
    if mr is None:
        return _not_found()
    for key in ("title", "description"):
        if key in params:
            mr[key] = params[key]
    if "labels" in params:
        mr["labels"] = _labels(params["labels"])
    if "reviewer_ids" in params:
        ids = [int(i) for i in params["reviewer_ids"]]
        if not set(ids) <= set(fake.users.values()):
            return json_answer(400, {"message": "400 Bad request - reviewer_ids is invalid"})
        mr["reviewer_ids"] = ids
    event = params.get("state_event")
    if event == "close" and mr["state"] == "opened":
        mr.update(state="closed", closed_at=now())
    elif event == "reopen" and mr["state"] == "closed":
        mr.update(state="opened", closed_at=None)
    mr["updated_at"] = now()
    return json_answer(200, fake.render_mr(project, mr))


def merge_mr(fake: FakeGitLab, project: FakeProject, iid: int, params: dict[str, Any]) -> Answer:
    mr = project.mrs.get(iid)
    if mr is None:
        return _not_found()
    rendered = fake.render_mr(project, mr)
    if mr["state"] != "opened":
        return json_answer(405, {"message": "405 Method Not Allowed"})
    if rendered["draft"]:
        return json_answer(fake.draft_refusal_status, {"message": "405 Method Not Allowed"})
    source_sha = project.head(mr["source_branch"])
    target_sha = project.head(mr["target_branch"])
    if source_sha is None or target_sha is None:
        return json_answer(406, {"message": "Branch cannot be merged"})
    if params.get("sha") and params["sha"] != source_sha:
        return json_answer(
            409, {"message": f"SHA does not match HEAD of source branch: {source_sha}"}
        )
    if project.pipelines_must_succeed and not _pipeline_succeeded(project, source_sha):
        return json_answer(405, {"message": "405 Method Not Allowed"})
    squash = bool(params.get("squash", mr["squash"]))
    message = params.get("squash_commit_message" if squash else "merge_commit_message") or (
        f"Merge branch '{mr['source_branch']}' into '{mr['target_branch']}'\n\n{mr['title']}\n\n"
        f"See merge request {project.path}!{iid}"
    )
    tree = project.git("rev-parse", f"{source_sha}^{{tree}}")
    parents = ["-p", target_sha] if squash else ["-p", target_sha, "-p", source_sha]
    new = project.git("commit-tree", tree, *parents, "-m", message)
    try:
        project.git("update-ref", f"refs/heads/{mr['target_branch']}", new, target_sha)
    except subprocess.CalledProcessError:
        return json_answer(406, {"message": "Branch cannot be merged"})
    mr.update(
        state="merged",
        sha=source_sha,
        merged_at=now(),
        updated_at=now(),
        squash=squash,
        merge_commit_sha=None if squash else new,
        squash_commit_sha=new if squash else None,
    )
    if fake.on_push is not None:
        fake.on_push(project, mr["target_branch"], target_sha, new)
    return json_answer(200, fake.render_mr(project, mr))


def create_note(fake: FakeGitLab, project: FakeProject, iid: int, params: dict[str, Any]) -> Answer:
    if iid not in project.mrs:
        return _not_found()
    if not params.get("body"):
        return json_answer(400, {"message": "400 Bad request - body is missing"})
    note = copy.deepcopy(fake.templates["note"])
    note.update(
        id=next(fake.ids),
        body=params["body"],
        noteable_iid=iid,
        noteable_type="MergeRequest",
        created_at=now(),
        updated_at=now(),
    )
    project.notes.append(note)
    return json_answer(201, note)


def list_statuses(project: FakeProject, sha: str, params: dict[str, Any]) -> Answer:
    entries = sorted(
        (s for s in project.statuses if s["sha"] == sha), key=lambda s: s["id"], reverse=True
    )
    if str(params.get("all", "false")).lower() != "true":
        latest: dict[str, dict[str, Any]] = {}
        for entry in entries:
            latest.setdefault(entry["name"], entry)
        entries = list(latest.values())
    return _page(entries, params)


def create_status(
    fake: FakeGitLab, project: FakeProject, sha: str, params: dict[str, Any]
) -> Answer:
    state = params.get("state")
    if state not in ("pending", "running", "success", "failed", "canceled", "skipped"):
        return json_answer(400, {"message": "400 Bad request - state does not have a valid value"})
    name = params.get("name") or params.get("context") or "default"
    active = [
        s
        for s in project.statuses
        if s["sha"] == sha and s["name"] == name and s["status"] in ACTIVE
    ]
    if active:
        entry = active[-1]
        if entry["status"] == state:
            verb = VERB[state]
            message = (
                f"Cannot transition status via :{verb} from :{state} "
                f'(Reason(s): Status cannot transition via "{verb}")'
            )
            return json_answer(400, {"message": message})
        entry.update(
            status=state,
            description=params.get("description", entry["description"]),
            target_url=params.get("target_url", entry["target_url"]),
            finished_at=None if state in ACTIVE else now(),
        )
    else:
        entry = fake.new_status(project, sha, name, state, False, params)
    _attach_to_pipeline(fake, project, sha)
    if fake.on_status is not None:
        fake.on_status(project, sha)
    return json_answer(201, entry)


def _attach_to_pipeline(fake: FakeGitLab, project: FakeProject, sha: str) -> None:
    """GitLab puts a commit status in the SHA's latest pipeline, creating an external one;
    the pipeline's status then folds the status's in."""
    pipelines = [p for p in project.pipelines if p["sha"] == sha]
    if not pipelines:
        pipelines = [fake.add_pipeline(project.path, sha, "pending", source="external")]
    pipeline = pipelines[-1]
    latest: dict[str, str] = {}  # a status set again replaces its earlier self, as a retried job
    for status in sorted((s for s in project.statuses if s["sha"] == sha), key=lambda s: s["id"]):
        latest[status["name"]] = status["status"]
    states = set(latest.values())
    if pipeline["source"] != "external":  # a CI pipeline: its jobs' result, and the status
        states.add(pipeline.setdefault("ci_status", pipeline["status"]))
    if states & {"failed", "canceled"}:
        pipeline["status"] = "failed"
    elif states & set(ACTIVE):
        pipeline["status"] = "running"
    else:
        pipeline["status"] = "success"


def _pipeline_succeeded(project: FakeProject, sha: str) -> bool:
    """Whether the latest pipeline of ``sha`` succeeded (GitLab's "Pipelines must succeed")."""
    pipelines = [p for p in project.pipelines if p["sha"] == sha]
    return bool(pipelines) and max(pipelines, key=lambda p: p["id"])["status"] == "success"


def list_pipelines(project: FakeProject, params: dict[str, Any]) -> Answer:
    found = [
        p
        for p in project.pipelines
        if all(params.get(k, p[k]) == p[k] for k in ("sha", "ref", "status", "source"))
    ]
    descending = params.get("sort", "desc") == "desc"
    found.sort(key=lambda p: p["id"], reverse=descending)
    return _page(found, params)
