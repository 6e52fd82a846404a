"""GitLab deliveries: token or signature, delivery ids, and events normalised to webhooks.events.

Handled: Push Hook (branches, ``refs/notes/*``), Merge Request Hook (open, update,
merge, close, reopen, and approvals), Pipeline Hook (the pipeline, its jobs, and the
commit statuses GitLab reports through external pipelines). System hooks are read by
``object_kind``. Anything else is Ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from promoter.models import Phase, PullRequestState
from webhooks import payload as p
from webhooks.events import (
    Event,
    Ignored,
    PullRequestChange,
    Push,
    RepoIdentity,
    StatusBatch,
    StatusChange,
)
from webhooks.providers import shapes
from webhooks.verify import GitLabAuth

EVENT_LABELS = {
    "Push Hook": "push",
    "Tag Push Hook": "tag_push",
    "Merge Request Hook": "merge_request",
    "Pipeline Hook": "pipeline",
    "Job Hook": "job",
    "Build Hook": "job",
    "Note Hook": "note",
    "Issue Hook": "issue",
    "Deployment Hook": "deployment",
    "Release Hook": "release",
    "System Hook": "system",
}
_KIND_OF_EVENT = {
    "Push Hook": "push",
    "Merge Request Hook": "merge_request",
    "Pipeline Hook": "pipeline",
}
_MR_ACTIONS = frozenset(
    {
        "open",
        "update",
        "merge",
        "close",
        "reopen",
        "approved",
        "unapproved",
        "approval",
        "unapproval",
    }
)
_MR_STATES = {
    "opened": PullRequestState.OPEN,
    "locked": PullRequestState.OPEN,
    "merged": PullRequestState.MERGED,
    "closed": PullRequestState.CLOSED,
}
_PIPELINE_PHASES = {
    "success": Phase.SUCCESS,
    "skipped": Phase.SUCCESS,
    "failed": Phase.FAILURE,
    "canceled": Phase.FAILURE,
    "cancelled": Phase.FAILURE,
}
"""Everything else (created, waiting_for_resource, preparing, pending, running, scheduled,
manual: a blocking manual job...) is pending: never success for a status the promoter does
not know. The same mapping as the GitLab plugin's, so a webhook and a fresh read agree."""
_URL_FIELDS = ("git_http_url", "git_ssh_url", "web_url", "http_url", "ssh_url", "url")


class GitLab:
    """The GitLab side of the receiver (see webhooks.receiver.Provider)."""

    name = "gitlab"

    def __init__(self, tokens: Sequence[str], signing_secrets: Sequence[str] = ()) -> None:
        self._auth = GitLabAuth(tokens, signing_secrets)

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool:
        """A signature decides when one is sent and keys are configured; else the token does."""
        return self._auth.verify(headers, body)

    def event_name(self, headers: Mapping[str, str]) -> str:
        return headers.get("x-gitlab-event", "").strip()

    def event_label(self, event: str, *, trusted: bool) -> str:
        return EVENT_LABELS.get(event, "other")

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None:
        """``webhook-id`` / ``Idempotency-Key`` (stable across retries), else the event UUID.

        ``X-Gitlab-Event-UUID`` is shared by recursive webhooks (distinct events that an
        earlier webhook triggered), so it is combined with a digest of the body (when
        there is no body yet, as for logging a refusal, the UUID alone is returned).
        """
        for name in ("webhook-id", "idempotency-key"):
            value = headers.get(name, "").strip()
            if value:
                return value[:128]
        uuid = headers.get("x-gitlab-event-uuid", "").strip()
        if not uuid:
            return None
        if body is None:
            return uuid[:128]
        return f"{uuid[:128]}/{hashlib.blake2b(body, digest_size=12).hexdigest()}"

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        kind = _KIND_OF_EVENT.get(event)
        if kind is None and event != "System Hook":
            return Ignored("event not handled")
        data = p.decode_fields(body, shapes.GitLabEvent)
        if kind is None:  # system hooks say what they are in the payload
            kind = p.opt_text(data, "object_kind", limit=64) or p.opt_text(
                data, "event_name", limit=64
            )
        if kind == "push":
            return _push(data)
        if kind == "merge_request":
            return _merge_request(data)
        if kind == "pipeline":
            return _pipeline(data)
        return Ignored("event not handled")


def _repo(data: p.JsonObject) -> RepoIdentity:
    project = p.opt_obj(data, "project")
    urls = [u for f in _URL_FIELDS if (u := p.opt_text(project, f, limit=p.MAX_URL))]
    repository = p.opt_obj(data, "repository")
    urls += [u for f in _URL_FIELDS if (u := p.opt_text(repository, f, limit=p.MAX_URL))]
    path = p.opt_text(project, "path_with_namespace", limit=512)
    project_id = p.opt_int(project, "id")
    if project_id is None:
        project_id = p.opt_int(data, "project_id")
    if not path and project_id is None and not urls:
        raise p.PayloadError("the payload names no project")
    return RepoIdentity("gitlab", path, project_id, tuple(urls))


def _push(data: p.JsonObject) -> Push:
    ref = p.text(data, "ref")[: p.MAX_TEXT]
    after = p.opt_sha(data, "after")
    commits = data.get("commits")
    listed = commits[:100] if isinstance(commits, list) else []
    brought = {str(c.get("id", "")).lower() for c in listed if isinstance(c, dict)}
    return Push(_repo(data), ref, p.opt_sha(data, "before"), after, after in brought)


def _merge_request(data: p.JsonObject) -> Event:
    attrs = p.obj(data, "object_attributes")
    action = p.opt_text(attrs, "action", limit=64)
    if action not in _MR_ACTIONS:
        return Ignored("action not handled")
    state = _MR_STATES.get(p.opt_text(attrs, "state", limit=64))
    if state is None:
        raise p.PayloadError("object_attributes.state is not a merge request state")
    mr_id = p.opt_int(attrs, "id")
    if mr_id is None:
        raise p.PayloadError("object_attributes.id must be an integer")
    return PullRequestChange(
        repo=_repo(data),
        pr_id=str(mr_id),
        number=p.opt_int(attrs, "iid"),
        state=state,
        action=action,
        head_branch=p.text(attrs, "source_branch")[: p.MAX_TEXT],
        base_branch=p.text(attrs, "target_branch")[: p.MAX_TEXT],
        head_sha=p.opt_sha(p.opt_obj(attrs, "last_commit"), "id"),
    )


def _pipeline(data: p.JsonObject) -> StatusBatch | Ignored:
    """A pipeline and its jobs, as gate results for the pipeline's commit.

    A CI pipeline reports the pipeline gate (the repository's pipeline key) and one status
    per job (``builds[]``, by job name). An *external* pipeline is how GitLab reports
    commit statuses set through its API (Argo CD, other CI systems, ``curl``): its
    ``builds[]`` are those statuses, by name, and there is no pipeline gate. A child
    pipeline is summed up in its parent. Reports are ordered by the pipeline's id.
    """
    attrs = p.obj(data, "object_attributes")
    source = p.opt_text(attrs, "source", limit=64)
    if source == "parent_pipeline":
        return Ignored("child pipeline")
    repo, sha = _repo(data), p.sha(attrs, "sha")
    number = p.opt_int(attrs, "id")
    url = p.opt_text(attrs, "url", limit=p.MAX_URL)
    at = p.timestamp(attrs.get("finished_at"), attrs.get("created_at"))
    changes: list[StatusChange] = []
    if source != "external":
        status = p.text(attrs, "status")[:64]
        changes.append(
            StatusChange(
                repo=repo,
                sha=sha,
                key=None,
                phase=_PIPELINE_PHASES.get(status, Phase.PENDING),
                description=f"pipeline #{number} {status}"
                if number is not None
                else f"pipeline {status}",
                url=url,
                source="gitlab/pipeline",
                updated_at=at,
                revision=number,
            )
        )
    builds = data.get("builds")
    for build in builds if isinstance(builds, list) else []:
        if not isinstance(build, dict):
            continue
        name = p.opt_text(build, "name", limit=255)
        status = p.opt_text(build, "status", limit=64)
        if not name or not status:
            continue
        changes.append(
            StatusChange(
                repo=repo,
                sha=sha,
                key=name,
                phase=_PIPELINE_PHASES.get(status, Phase.PENDING),
                description=f"{status} (pipeline #{number})" if number is not None else status,
                url=url,
                source="gitlab/status" if source == "external" else "gitlab/job",
                updated_at=p.timestamp(
                    build.get("finished_at"), build.get("started_at"), build.get("created_at")
                ),
                revision=number,
            )
        )
    if not changes:
        return Ignored("an external pipeline with no statuses")
    return StatusBatch(repo=repo, sha=sha, changes=tuple(changes))
