"""Forgejo and Gitea deliveries: HMAC signature, and push, status and pull_request events.

Both send the hex HMAC-SHA256 of the raw body, Forgejo in ``X-Forgejo-Signature``
and Gitea in ``X-Gitea-Signature`` (Forgejo sends both); the event name comes in
``X-Forgejo-Event`` / ``X-Gitea-Event`` and the delivery id in
``X-Forgejo-Delivery`` / ``X-Gitea-Delivery``. Handled: ``push`` (branches, notes),
``status`` (a commit status) and ``pull_request`` (opened, reopened, synchronized,
closed, merged or not); anything else is Ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from promoter.models import Phase, PullRequestState
from webhooks import payload as p
from webhooks.events import Event, Ignored, PullRequestChange, Push, RepoIdentity, StatusChange
from webhooks.providers import shapes
from webhooks.verify import ForgejoSignature

_EVENT_NAME = re.compile(r"^[a-z_]{1,40}$")
_PHASES = {
    "pending": Phase.PENDING,
    "success": Phase.SUCCESS,
    "skipped": Phase.SUCCESS,
    "failure": Phase.FAILURE,
    "error": Phase.FAILURE,
    "warning": Phase.FAILURE,
}
_URL_FIELDS = ("clone_url", "ssh_url", "html_url")
_PR_ACTIONS = frozenset({"opened", "reopened", "synchronized", "closed"})


def _header(headers: Mapping[str, str], name: str) -> str:
    value: str = headers.get(f"x-forgejo-{name}") or headers.get(f"x-gitea-{name}") or ""
    return value.strip()


class Forgejo:
    """The Forgejo / Gitea side of the receiver (see webhooks.receiver.Provider)."""

    name = "forgejo"

    def __init__(self, secrets: Sequence[str]) -> None:
        self._signature = ForgejoSignature(secrets)

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool:
        return self._signature.verify(_header(headers, "signature"), body)

    def event_name(self, headers: Mapping[str, str]) -> str:
        return _header(headers, "event")

    def event_label(self, event: str, *, trusted: bool) -> str:
        if event in _HANDLERS or (trusted and _EVENT_NAME.match(event)):
            return event
        return "other"

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None:
        return _header(headers, "delivery")[:128] or None

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        handler = _HANDLERS.get(event)
        if handler is None:
            return Ignored("event not handled")
        normalise, shape = handler
        return normalise(p.decode_fields(body, shape))


def _repo(data: p.JsonObject) -> RepoIdentity:
    repo = p.obj(data, "repository")
    urls = tuple(u for f in _URL_FIELDS if (u := p.opt_text(repo, f, limit=p.MAX_URL)))
    return RepoIdentity("forgejo", p.opt_text(repo, "full_name", limit=512), None, urls)


def _push(data: p.JsonObject) -> Push:
    """A moved ref; ``after`` is new when the push brought it (among its ``commits``, as on
    GitLab): its statuses can only come later, by a ``status`` delivery."""
    ref = p.text(data, "ref")[: p.MAX_TEXT]
    after = p.opt_sha(data, "after")
    commits = data.get("commits")
    listed = commits[:100] if isinstance(commits, list) else []
    brought = {str(c.get("id", "")).lower() for c in listed if isinstance(c, dict)}
    return Push(_repo(data), ref, p.opt_sha(data, "before"), after, after in brought)


def _status(data: p.JsonObject) -> StatusChange:
    phase = _PHASES.get(p.text(data, "state"))
    if phase is None:
        raise p.PayloadError("state must be pending, success, failure, error or warning")
    key = p.text(data, "context")
    if len(key) > 255:
        raise p.PayloadError("a status key must have 1 to 255 characters")
    return StatusChange(
        repo=_repo(data),
        sha=p.sha(data, "sha"),
        key=key,
        phase=phase,
        description=p.opt_text(data, "description"),
        url=p.opt_text(data, "target_url", limit=p.MAX_URL),
        source="forgejo/status",
        updated_at=p.timestamp(data.get("updated_at"), data.get("created_at")),
    )


def _pull_request(data: p.JsonObject) -> Event:
    action = p.opt_text(data, "action", limit=64)
    if action not in _PR_ACTIONS:
        return Ignored("action not handled")
    pr = p.obj(data, "pull_request")
    head, base = p.obj(pr, "head"), p.obj(pr, "base")
    number = p.opt_int(pr, "number") or p.opt_int(data, "number")
    pr_id = p.opt_int(pr, "id")
    state = PullRequestState.OPEN
    if p.opt_text(pr, "state", limit=16) == "closed":
        merged = p.opt_bool(pr, "merged")
        state = PullRequestState.MERGED if merged else PullRequestState.CLOSED
    return PullRequestChange(
        repo=_repo(data),
        pr_id=str(pr_id if pr_id is not None else number),
        number=number,
        state=state,
        action="synchronize" if action == "synchronized" else action,
        head_branch=p.text(head, "ref")[: p.MAX_TEXT],
        base_branch=p.text(base, "ref")[: p.MAX_TEXT],
        head_sha=p.opt_sha(head, "sha"),
    )


_HANDLERS: dict[str, tuple[Callable[[p.JsonObject], Event], type[Any]]] = {
    # event: (what the payload means, the fields read)
    "push": (_push, shapes.ForgejoPush),
    "status": (_status, shapes.ForgejoStatus),
    "pull_request": (_pull_request, shapes.ForgejoPullRequest),
}
