"""Bitbucket Data Center deliveries: the HMAC signature, and refs-changed and pull-request
events.

With a secret set on the webhook, Data Center sends ``X-Hub-Signature: sha256=<hex
HMAC-SHA256 of the body>``; every configured secret is tried (rotation). The event is
``X-Event-Key``, the delivery ``X-Request-Id`` (without it, a hash of the body).
Handled: ``repo:refs_changed`` (every branch the push moved: ``ADD``, ``UPDATE``,
``DELETE``), ``pr:*`` (opened, from_ref_updated, modified, merged, declined, deleted, and
the reviewers' approved, unapproved, needs_work) and ``diagnostics:ping`` (the "Test
connection" button); anything else is Ignored. Data Center sends no build-status events:
statuses are read from it. A repository is named ``PROJECT/slug`` (its ``path``), or by its
clone links where the server sends them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from promoter.models import PullRequestState
from webhooks import payload as p
from webhooks.events import (
    Event,
    Ignored,
    Ping,
    PullRequestChange,
    Push,
    PushBatch,
    RepoIdentity,
)
from webhooks.providers import bitbucket_shapes as shapes
from webhooks.providers.bitbucket_receiver import BitbucketReceiver

PROVIDER = "bitbucket-datacenter"
_EVENT_NAME = re.compile(r"^[a-z_]{1,40}(:[a-z_]{1,40}){1,3}$")
_STATES = {
    "OPEN": PullRequestState.OPEN,
    "MERGED": PullRequestState.MERGED,
    "DECLINED": PullRequestState.CLOSED,
}
_PR_ACTIONS = {
    "pr:opened": "opened",
    "pr:from_ref_updated": "synchronize",
    "pr:modified": "edited",
    "pr:merged": "closed",
    "pr:declined": "closed",
    "pr:deleted": "closed",
    "pr:reviewer:approved": "approved",
    "pr:reviewer:unapproved": "unapproved",
    "pr:reviewer:needs_work": "changes_requested",
}


class BitbucketDataCenter(BitbucketReceiver):
    """The Bitbucket Data Center side of the receiver (see webhooks.receiver.Provider)."""

    name = PROVIDER

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__(
            secrets, handlers=_HANDLERS, event_name=_EVENT_NAME, delivery_header="x-request-id"
        )

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        if event == "diagnostics:ping":
            return Ping()
        return super().parse(event, headers, body)


def _identity(repo: p.JsonObject) -> RepoIdentity:
    key = p.opt_text(p.opt_obj(repo, "project"), "key", limit=256)
    slug = p.opt_text(repo, "slug", limit=256)
    links = p.opt_obj(repo, "links").get("clone")
    urls = tuple(
        url
        for link in (links[:10] if isinstance(links, list) else [])
        if isinstance(link, dict) and (url := p.opt_text(link, "href", limit=p.MAX_URL))
    )
    return RepoIdentity(PROVIDER, f"{key}/{slug}" if key and slug else "", None, urls)


def _refs_changed(data: p.JsonObject, event: str) -> Event:
    repo = _identity(p.obj(data, "repository"))
    changes = data.get("changes")
    if not isinstance(changes, list):
        raise p.PayloadError("changes must be a list")
    pushes = []
    for change in changes[:100]:
        if not isinstance(change, dict):
            raise p.PayloadError("changes must be objects")
        ref = p.opt_text(change, "refId") or p.opt_text(p.opt_obj(change, "ref"), "id")
        if not ref.startswith("refs/"):
            continue
        before, after = p.opt_sha(change, "fromHash"), p.opt_sha(change, "toHash")
        pushes.append(Push(repo, ref[: p.MAX_TEXT], before, after))
    if not pushes:
        return Ignored("no ref moved")
    return pushes[0] if len(pushes) == 1 else PushBatch(repo, tuple(pushes))


def _branch(ref: p.JsonObject) -> str:
    ref_id = p.opt_text(ref, "id")
    if ref_id.startswith("refs/heads/"):
        return ref_id.removeprefix("refs/heads/")
    return p.text(ref, "displayId")[: p.MAX_TEXT]


def _pull_request(data: p.JsonObject, event: str) -> PullRequestChange:
    pr = p.obj(data, "pullRequest")
    source, target = p.obj(pr, "fromRef"), p.obj(pr, "toRef")
    number = p.opt_int(pr, "id")
    state = _STATES.get(p.opt_text(pr, "state", limit=16), PullRequestState.OPEN)
    if event == "pr:deleted":
        state = PullRequestState.CLOSED
    return PullRequestChange(
        repo=_identity(p.obj(target, "repository")),
        pr_id=str(number),
        number=number,
        state=state,
        action=_PR_ACTIONS[event],
        head_branch=_branch(source),
        base_branch=_branch(target),
        head_sha=p.opt_sha(source, "latestCommit"),
    )


_HANDLERS: dict[str, tuple[Callable[[p.JsonObject, str], Event], type[Any]]] = {
    "repo:refs_changed": (_refs_changed, shapes.DataCenterRefsChanged),
    **{event: (_pull_request, shapes.DataCenterPullRequest) for event in _PR_ACTIONS},
}
