"""Azure DevOps service hooks: basic auth and/or a shared header, push and pull-request events.

Azure DevOps signs nothing: a service hook ("Web Hooks" consumer) proves where it comes
from only by what its subscription was told to send, a basic authentication user name and
password and any HTTP headers. So a delivery is accepted only with what
``webhooks.azureDevOps`` configures: the basic auth password (and user name, when given)
and/or the shared header's value, each compared in constant time against every configured
value (old and new side by side while rotating). A receiver configured with neither
refuses every delivery (401). Use HTTPS: unsigned, the secret is only as safe as the
channel.

The event is in the body (``eventType``); the delivery id is the event's ``id``, the same
on a retry (else ``subscriptionId:notificationId``). Handled: ``git.push`` (every ref the
push moved; a ref is new when the push brought its commit), ``git.pullrequest.created``,
``git.pullrequest.updated`` and ``git.pullrequest.merged`` (Azure made its merge commit,
which it does after each push too: nothing new of a pull request the promoter knows at that
head; the pull request's ``status`` says whether it was completed). Azure has no event for a commit
or pull-request status: a status posted there is read at the next reconcile. Anything
else is Ignored.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable, Mapping, Sequence

import msgspec

from promoter.models import PullRequestState
from webhooks import payload as p
from webhooks.events import Event, Ignored, PullRequestChange, Push, PushBatch, RepoIdentity
from webhooks.providers import shapes
from webhooks.verify import refuse_empty

PROVIDER = "azure-devops"
LABEL = "service_hook"
"""The metrics' event label (the event is named in the body, read after the checks)."""
_STATES = {
    "active": PullRequestState.OPEN,
    "completed": PullRequestState.MERGED,
    "abandoned": PullRequestState.CLOSED,
}
_URL_FIELDS = ("remoteUrl", "webUrl", "sshUrl")
ACTIONS = {"git.pullrequest.created": "opened", "git.pullrequest.merged": "merge_attempted"}
"""What each event says of an active pull request (``updated``: it changed, read it again)."""
_IDS = msgspec.json.Decoder(shapes.AzureIds)


def _bytes(value: str) -> bytes:
    return value.encode("utf-8")


class ServiceHookAuth:
    """The basic auth of a service hook and/or its shared header, every value tried."""

    def __init__(
        self,
        *,
        username: str | None,
        passwords: Sequence[str],
        header: str | None,
        tokens: Sequence[str],
    ) -> None:
        refuse_empty(passwords, "Azure DevOps webhook password")
        refuse_empty(tokens, "Azure DevOps webhook header value")
        self._username = _bytes(username) if username is not None else None
        self._passwords = [_bytes(s) for s in passwords]
        self._header = (header or "").lower()
        self._tokens = [_bytes(t) for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._passwords or self._tokens)

    def verify(self, headers: Mapping[str, str]) -> bool:
        if not self:
            return False
        ok = True
        if self._passwords:
            ok &= self._basic(headers.get("authorization", ""))
        if self._tokens:
            ok &= _any_equal(
                headers.get(self._header, "").encode("latin-1", "replace"), self._tokens
            )
        return ok

    def _basic(self, header: str) -> bool:
        scheme, _, encoded = header.strip().partition(" ")
        if scheme.lower() != "basic" or not encoded:
            return False
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return False
        if not sep:
            return False
        ok = _any_equal(password, self._passwords)
        if self._username is not None:
            ok &= hmac.compare_digest(user, self._username)
        return ok


def _any_equal(given: bytes, accepted: Sequence[bytes]) -> bool:
    """Whether ``given`` is one of ``accepted``; every one is compared (constant time)."""
    ok = False
    for value in accepted:
        ok |= hmac.compare_digest(given, value)
    return ok and bool(given)


class AzureDevOps:
    """The Azure DevOps side of the receiver (see webhooks.receiver.Provider)."""

    name = PROVIDER

    def __init__(self, auth: ServiceHookAuth) -> None:
        self._auth = auth

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool:
        return self._auth.verify(headers)

    def event_name(self, headers: Mapping[str, str]) -> str:
        return ""  # in the body

    def event_label(self, event: str, *, trusted: bool) -> str:
        return LABEL

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None:
        """The event's ``id`` (the same on a retry), else the subscription's notification."""
        if body is None:
            return None
        try:
            ids = _IDS.decode(body)
        except (msgspec.MsgspecError, ValueError):
            return None
        event = ids.get("id")
        if isinstance(event, str) and event.strip():
            return event.strip()[:128]
        notification, subscription = ids.get("notificationId"), ids.get("subscriptionId")
        if isinstance(notification, int) and not isinstance(notification, bool):
            return f"{str(subscription or '')[:64]}:{notification}"
        return None

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        data = p.decode_fields(body, shapes.AzureDelivery)
        kind = p.opt_text(data, "eventType", limit=128)
        handler = _HANDLERS.get(kind)
        if handler is None:
            return Ignored("event not handled")
        return handler(p.obj(data, "resource"), kind)


def _repo(resource: p.JsonObject) -> RepoIdentity:
    repo = p.obj(resource, "repository")
    project = p.opt_text(p.opt_obj(repo, "project"), "name", limit=512)
    name = p.opt_text(repo, "name", limit=512)
    urls = tuple(u for f in _URL_FIELDS if (u := p.opt_text(repo, f, limit=p.MAX_URL)))
    return RepoIdentity(PROVIDER, f"{project}/{name}" if project and name else "", None, urls)


def _push(resource: p.JsonObject, kind: str) -> Event:
    """Every ref the push moved; its ``after`` is new when among the push's ``commits``."""
    repo = _repo(resource)
    updates = resource.get("refUpdates")
    if not isinstance(updates, list) or not updates:
        raise p.PayloadError("refUpdates must be a non-empty list")
    commits = resource.get("commits")
    listed = commits[:100] if isinstance(commits, list) else []
    brought = {str(c.get("commitId", "")).lower() for c in listed if isinstance(c, dict)}
    pushes = []
    for update in updates[:100]:
        if not isinstance(update, dict):
            raise p.PayloadError("refUpdates must hold objects")
        after = p.opt_sha(update, "newObjectId")
        ref = p.text(update, "name")[: p.MAX_TEXT]
        pushes.append(Push(repo, ref, p.opt_sha(update, "oldObjectId"), after, after in brought))
    return pushes[0] if len(pushes) == 1 else PushBatch(repo, tuple(pushes))


def _pull_request(resource: p.JsonObject, kind: str) -> Event:
    number = p.opt_int(resource, "pullRequestId")
    if number is None:
        raise p.PayloadError("pullRequestId must be an integer")
    state = _STATES.get(p.opt_text(resource, "status", limit=32))
    if state is None:
        return Ignored("pull request status not handled")
    action = ACTIONS.get(kind, "synchronize")
    head = p.opt_obj(resource, "lastMergeSourceCommit")
    return PullRequestChange(
        repo=_repo(resource),
        pr_id=str(number),
        number=number,
        state=state,
        action="closed" if state is not PullRequestState.OPEN else action,
        head_branch=p.text(resource, "sourceRefName").removeprefix("refs/heads/")[: p.MAX_TEXT],
        base_branch=p.text(resource, "targetRefName").removeprefix("refs/heads/")[: p.MAX_TEXT],
        head_sha=p.opt_sha(head, "commitId"),
    )


_HANDLERS: dict[str, Callable[[p.JsonObject, str], Event]] = {
    "git.push": _push,
    "git.pullrequest.created": _pull_request,
    "git.pullrequest.updated": _pull_request,
    "git.pullrequest.merged": _pull_request,
}
