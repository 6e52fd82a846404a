"""Bitbucket Cloud deliveries: the HMAC signature, and push, pull-request and build-status
events.

With a secret set on the webhook, Bitbucket Cloud sends ``X-Hub-Signature: sha256=<hex
HMAC-SHA256 of the body>``; every configured secret is tried (rotation). The event is
``X-Event-Key``, the delivery ``X-Request-UUID`` (the same on a redelivery; without it, a
hash of the body). Handled: ``repo:push`` (every ref the push moved; a tip among the
push's ``commits`` is new), ``pullrequest:*`` (created, updated, approved, unapproved,
changes requested or removed, fulfilled = merged, rejected = declined) and
``repo:commit_status_created`` / ``_updated``; anything else is Ignored. A pull request
names its head by 12 characters only: the event carries no head SHA.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from promoter.models import Phase, PullRequestState
from webhooks import payload as p
from webhooks.events import (
    Event,
    Ignored,
    PullRequestChange,
    Push,
    PushBatch,
    RepoIdentity,
    StatusChange,
)
from webhooks.providers import bitbucket_shapes as shapes
from webhooks.providers.bitbucket_receiver import BitbucketReceiver

PROVIDER = "bitbucket-cloud"
_EVENT_NAME = re.compile(r"^[a-z_]{1,40}:[a-z_]{1,60}$")
_STATES = {
    "OPEN": PullRequestState.OPEN,
    "MERGED": PullRequestState.MERGED,
    "DECLINED": PullRequestState.CLOSED,
    "SUPERSEDED": PullRequestState.CLOSED,
}
_PHASES = {"SUCCESSFUL": Phase.SUCCESS, "FAILED": Phase.FAILURE, "STOPPED": Phase.FAILURE}
"""Any other state (INPROGRESS, or one Bitbucket adds) waits."""
_PR_ACTIONS = {
    "pullrequest:created": "opened",
    "pullrequest:updated": "synchronize",
    "pullrequest:approved": "approved",
    "pullrequest:unapproved": "unapproved",
    "pullrequest:changes_request_created": "changes_requested",
    "pullrequest:changes_request_removed": "changes_request_removed",
    "pullrequest:fulfilled": "closed",
    "pullrequest:rejected": "closed",
}


class BitbucketCloud(BitbucketReceiver):
    """The Bitbucket Cloud side of the receiver (see webhooks.receiver.Provider)."""

    name = PROVIDER

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__(
            secrets, handlers=_HANDLERS, event_name=_EVENT_NAME, delivery_header="x-request-uuid"
        )


def _repo(data: p.JsonObject) -> RepoIdentity:
    repo = p.obj(data, "repository")
    html = p.opt_obj(p.opt_obj(repo, "links"), "html")
    url = p.opt_text(html, "href", limit=p.MAX_URL)
    full_name = p.opt_text(repo, "full_name", limit=512)
    return RepoIdentity(PROVIDER, full_name, None, (url,) if url else ())


def _push(data: p.JsonObject, event: str) -> Event:
    repo = _repo(data)
    changes = p.opt_obj(data, "push").get("changes")
    if not isinstance(changes, list):
        raise p.PayloadError("push.changes must be a list")
    pushes = []
    for change in changes[:100]:
        if not isinstance(change, dict):
            raise p.PayloadError("push.changes must be objects")
        new, old = p.opt_obj(change, "new"), p.opt_obj(change, "old")
        ref = new or old
        kind = p.opt_text(ref, "type", limit=32)
        name = p.opt_text(ref, "name")
        if kind not in ("branch", "named_branch") or not name:
            continue  # a tag, or a ref of no kind the promoter watches
        after = p.opt_sha(p.opt_obj(new, "target"), "hash") if new else None
        before = p.opt_sha(p.opt_obj(old, "target"), "hash") if old else None
        commits = change.get("commits")
        listed = commits[:100] if isinstance(commits, list) else []
        brought = {str(c.get("hash", "")).lower() for c in listed if isinstance(c, dict)}
        pushes.append(Push(repo, f"refs/heads/{name}", before, after, after in brought))
    if not pushes:
        return Ignored("no branch moved")
    return pushes[0] if len(pushes) == 1 else PushBatch(repo, tuple(pushes))


def _endpoint_branch(pr: p.JsonObject, side: str) -> str:
    return p.text(p.obj(p.obj(pr, side), "branch"), "name")[: p.MAX_TEXT]


def _pull_request(data: p.JsonObject, event: str) -> PullRequestChange:
    pr = p.obj(data, "pullrequest")
    number = p.opt_int(pr, "id")
    state = _STATES.get(p.opt_text(pr, "state", limit=16), PullRequestState.OPEN)
    return PullRequestChange(
        repo=_repo(data),
        pr_id=str(number),
        number=number,
        state=state,
        action=_PR_ACTIONS[event],
        head_branch=_endpoint_branch(pr, "source"),
        base_branch=_endpoint_branch(pr, "destination"),
        head_sha=None,  # Cloud gives 12 characters of it
    )


def _status(data: p.JsonObject, event: str) -> StatusChange:
    status = p.obj(data, "commit_status")
    state = p.text(status, "state")
    key = p.text(status, "key")
    if len(key) > 255:
        raise p.PayloadError("a status key must have 1 to 255 characters")
    return StatusChange(
        repo=_repo(data),
        sha=p.sha(p.obj(status, "commit"), "hash"),
        key=key,
        phase=_PHASES.get(state, Phase.PENDING),
        description=p.opt_text(status, "description") or p.opt_text(status, "name"),
        url=p.opt_text(status, "url", limit=p.MAX_URL),
        source=PROVIDER,
        updated_at=p.timestamp(status.get("updated_on"), status.get("created_on")),
    )


_HANDLERS: dict[str, tuple[Callable[[p.JsonObject, str], Event], type[Any]]] = {
    "repo:push": (_push, shapes.CloudPush),
    "repo:commit_status_created": (_status, shapes.CloudStatus),
    "repo:commit_status_updated": (_status, shapes.CloudStatus),
    **{event: (_pull_request, shapes.CloudPullRequest) for event in _PR_ACTIONS},
}
