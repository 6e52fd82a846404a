"""GitHub deliveries: signature, content types, and events normalised to webhooks.events.

Handled: ``ping``; ``push`` (branches, ``refs/notes/*``); ``status``; ``check_run``
(created, completed); ``check_suite`` (completed); ``pull_request`` (opened,
reopened, synchronize, closed, merged or not, enqueued, dequeued); ``pull_request_review``
(submitted, dismissed); ``merge_group`` (checks_requested, destroyed: the base branch's
strategies are woken). Anything else is Ignored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from promoter.models import Phase, PullRequestState
from webhooks import payload as p
from webhooks.events import (
    Event,
    Ignored,
    Ping,
    PullRequestChange,
    Push,
    RepoIdentity,
    StatusChange,
)
from webhooks.providers import shapes
from webhooks.verify import GitHubSignature

_EVENT_NAME = re.compile(r"^[a-z_]{1,40}$")
_STATUS_PHASES = {
    "success": Phase.SUCCESS,
    "pending": Phase.PENDING,
    "failure": Phase.FAILURE,
    "error": Phase.FAILURE,
}
_SUCCESSFUL_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
_URL_FIELDS = ("clone_url", "ssh_url", "git_url", "html_url", "svn_url")


def conclusion_phase(status: str, conclusion: str) -> Phase:
    """A check's phase: pending until completed; then success, neutral, skipped → success."""
    if status != "completed":
        return Phase.PENDING
    return Phase.SUCCESS if conclusion in _SUCCESSFUL_CONCLUSIONS else Phase.FAILURE


class GitHub:
    """The GitHub side of the receiver (see webhooks.receiver.Provider)."""

    name = "github"

    def __init__(self, secrets: Sequence[str]) -> None:
        self._signature = GitHubSignature(secrets)

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool:
        return self._signature.verify(headers.get("x-hub-signature-256"), body)

    def event_name(self, headers: Mapping[str, str]) -> str:
        return headers.get("x-github-event", "").strip()

    def event_label(self, event: str, *, trusted: bool) -> str:
        """The metric label: the event's name when handled (or, once verified, well formed)."""
        if event in HANDLED or (trusted and _EVENT_NAME.match(event)):
            return event
        return "other"

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None:
        """``X-GitHub-Delivery``, the same on a redelivery; without it, a hash of the body.

        A sender that leaves the header out (a proxy that strips it, a hand-made
        delivery) still sends the same bytes twice when it retries.
        """
        value = headers.get("x-github-delivery", "").strip()[:128]
        if value or body is None:
            return value or None
        return "body-sha256:" + hashlib.sha256(body).hexdigest()

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        handler = _HANDLERS.get(event)
        if handler is None:
            return Ignored("event not handled")
        actions, normalise, shape = handler
        data = _decode(headers.get("content-type", ""), body, shape)
        action = p.opt_text(data, "action", limit=64)
        if actions is not None and action not in actions:
            return Ignored("action not handled")
        return normalise(data, action)


def _decode(content_type: str, body: bytes, shape: type[Any]) -> p.JsonObject:
    """The payload of either content type GitHub sends: the fields of ``shape``."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json":
        return p.decode_fields(body, shape)
    if media == "application/x-www-form-urlencoded":
        try:
            form = parse_qs(body.decode("utf-8"), max_num_fields=16, strict_parsing=False)
        except (UnicodeDecodeError, ValueError) as exc:
            raise p.PayloadError("form body is not UTF-8 or has too many fields") from exc
        values = form.get("payload")
        if not values:
            raise p.PayloadError("form body has no payload field")
        return p.decode_fields(values[0], shape)
    raise p.PayloadError("content type must be application/json or x-www-form-urlencoded")


def _repo(data: p.JsonObject) -> RepoIdentity:
    repo = p.obj(data, "repository")
    urls = tuple(u for f in _URL_FIELDS if (u := p.opt_text(repo, f, limit=p.MAX_URL)))
    return RepoIdentity("github", p.opt_text(repo, "full_name", limit=512), None, urls)


def _push(data: p.JsonObject, action: str) -> Push:
    ref = p.text(data, "ref")[: p.MAX_TEXT]
    after = p.opt_sha(data, "after")
    head = p.opt_obj(data, "head_commit")
    new = after is not None and p.opt_sha(head, "id") == after and p.opt_bool(head, "distinct")
    return Push(_repo(data), ref, p.opt_sha(data, "before"), after, new)


def _status(data: p.JsonObject, action: str) -> StatusChange:
    state = p.text(data, "state")
    phase = _STATUS_PHASES.get(state)
    if phase is None:
        raise p.PayloadError("state must be success, pending, failure or error")
    return StatusChange(
        repo=_repo(data),
        sha=p.sha(data, "sha"),
        key=_key(p.text(data, "context")),
        phase=phase,
        description=p.opt_text(data, "description"),
        url=p.opt_text(data, "target_url", limit=p.MAX_URL),
        source="github/status",
        updated_at=p.timestamp(data.get("updated_at"), data.get("created_at")),
    )


def _check_run(data: p.JsonObject, action: str) -> StatusChange:
    run = p.obj(data, "check_run")
    status = p.text(run, "status")
    conclusion = p.opt_text(run, "conclusion", limit=64)
    output = p.opt_obj(run, "output")
    return StatusChange(
        repo=_repo(data),
        sha=p.sha(run, "head_sha"),
        key=_key(p.text(run, "name")),
        phase=conclusion_phase(status, conclusion),
        description=p.opt_text(output, "title") or conclusion or status[:64],
        url=p.opt_text(run, "html_url", limit=p.MAX_URL),
        source="github/check_run",
        updated_at=p.timestamp(run.get("completed_at"), run.get("started_at")),
    )


def _check_suite(data: p.JsonObject, action: str) -> StatusChange:
    suite = p.obj(data, "check_suite")
    app = p.obj(suite, "app")
    key = p.opt_text(app, "slug", limit=256) or p.opt_text(app, "name", limit=256)
    conclusion = p.opt_text(suite, "conclusion", limit=64)
    return StatusChange(
        repo=_repo(data),
        sha=p.sha(suite, "head_sha"),
        key=_key(key),
        phase=conclusion_phase(p.text(suite, "status"), conclusion),
        description=f"check suite {conclusion or 'completed'}",
        url=p.opt_text(suite, "url", limit=p.MAX_URL),
        source="github/check_suite",
        updated_at=p.timestamp(suite.get("updated_at"), suite.get("created_at")),
    )


def _ping(data: p.JsonObject, action: str) -> Ping:
    return Ping()


def _review(data: p.JsonObject, action: str) -> PullRequestChange:
    return _pull_request(data, "review_" + action)


def _pull_request(data: p.JsonObject, action: str) -> PullRequestChange:
    pr = p.obj(data, "pull_request")
    head, base = p.obj(pr, "head"), p.obj(pr, "base")
    pr_id = p.opt_int(pr, "id")
    if pr_id is None:
        raise p.PayloadError("pull_request.id must be an integer")
    state = PullRequestState.OPEN
    if p.opt_text(pr, "state", limit=16) == "closed":
        merged = p.opt_bool(pr, "merged") or bool(p.opt_text(pr, "merged_at", limit=64))
        state = PullRequestState.MERGED if merged else PullRequestState.CLOSED
    return PullRequestChange(
        repo=_repo(data),
        pr_id=str(pr_id),
        number=p.opt_int(pr, "number"),
        state=state,
        action=action,
        head_branch=p.text(head, "ref")[: p.MAX_TEXT],
        base_branch=p.text(base, "ref")[: p.MAX_TEXT],
        head_sha=p.opt_sha(head, "sha"),
    )


def _merge_group(data: p.JsonObject, action: str) -> Push:
    """A merge group of the merge queue was made or destroyed: the strategies of its base
    branch look at their queued PR again (read through the SCM, never from the hook)."""
    group = p.obj(data, "merge_group")
    base = p.text(group, "base_ref")[: p.MAX_TEXT]
    return Push(_repo(data), base, p.opt_sha(group, "base_sha"), None)


_Normaliser = Callable[[p.JsonObject, str], Event]
_PR_ACTIONS = frozenset({"opened", "reopened", "synchronize", "closed", "enqueued", "dequeued"})
_HANDLERS: dict[str, tuple[frozenset[str] | None, _Normaliser, type[Any]]] = {
    # event: (the actions handled, None for all; what the payload means; the fields read)
    "ping": (None, _ping, shapes.GitHubPing),
    "push": (None, _push, shapes.GitHubPush),
    "status": (None, _status, shapes.GitHubStatus),
    "check_run": (frozenset({"created", "completed"}), _check_run, shapes.GitHubCheckRun),
    "check_suite": (frozenset({"completed"}), _check_suite, shapes.GitHubCheckSuite),
    "pull_request": (_PR_ACTIONS, _pull_request, shapes.GitHubPullRequest),
    "merge_group": (
        frozenset({"checks_requested", "destroyed"}),
        _merge_group,
        shapes.GitHubMergeGroup,
    ),
    "pull_request_review": (
        frozenset({"submitted", "dismissed"}),
        _review,
        shapes.GitHubPullRequest,
    ),
}
HANDLED = frozenset(_HANDLERS)


def _key(value: str) -> str:
    if not value or len(value) > 255:
        raise p.PayloadError("a status key must have 1 to 255 characters")
    return value
