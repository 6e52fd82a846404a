"""Azure DevOps JSON to the promoter's models: pull requests, statuses, reviewer votes.

Read defensively: the captures of older versions lack fields newer ones have
(``isDraft``, ``labels``, ``votedFor``), and every absent field reads as empty.

A status's ``context`` is a genre and a name; its gate key is ``genre/name`` (``name``
alone without a genre), and a key is written back the same way, so the promoter's own
check ``promoter/previous-environment`` is the status of genre ``promoter``, which a
branch policy's status check can require.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from promoter.errors import ScmUnavailable
from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState, Review, utcnow

HEADS = "refs/heads/"
STATES = {
    "active": PullRequestState.OPEN,
    "completed": PullRequestState.MERGED,
    "abandoned": PullRequestState.CLOSED,
}
PHASES = {
    "succeeded": Phase.SUCCESS,
    "notApplicable": Phase.SUCCESS,
    "pending": Phase.PENDING,
    "notSet": Phase.PENDING,
    "failed": Phase.FAILURE,
    "error": Phase.FAILURE,
    "partiallySucceeded": Phase.FAILURE,
}
"""``GitStatusState``; a state Azure adds later is pending until someone maps it."""
AZURE_STATE = {Phase.PENDING: "pending", Phase.SUCCESS: "succeeded", Phase.FAILURE: "failed"}
APPROVED = 10
"""A vote of 10 approves; 5 ("approved with suggestions") does not count as an approval."""
REJECTED = -10
MAX_DESCRIPTION = 4000
MAX_TITLE = 400


def ref(branch: str) -> str:
    return branch if branch.startswith("refs/") else HEADS + branch


def branch(ref_name: Any) -> str:
    return str(ref_name or "").removeprefix(HEADS)


def commit_id(data: Mapping[str, Any], field: str) -> str:
    found = data.get(field)
    return str(found.get("commitId") or "") if isinstance(found, dict) else ""


def web_url(data: Mapping[str, Any]) -> str:
    """The pull request's page: the repository's web URL and ``/pullrequest/N``."""
    repo = data.get("repository") or {}
    base = str(repo.get("webUrl") or repo.get("remoteUrl") or "")
    number = data.get("pullRequestId")
    return f"{base.rstrip('/')}/pullrequest/{number}" if base and number is not None else ""


def pull_request(data: Mapping[str, Any]) -> PullRequest:
    """A ``GitPullRequest`` as the promoter's PullRequest; ``number`` is pullRequestId.
    An answer without one is no pull request: ScmUnavailable, as any answer not understood."""
    number = data.get("pullRequestId") if isinstance(data, dict) else None
    if not isinstance(number, int) or isinstance(number, bool):
        raise ScmUnavailable("Azure DevOps answered a pull request without its pullRequestId")
    state = STATES.get(str(data.get("status")), PullRequestState.CLOSED)
    merged = commit_id(data, "lastMergeCommit") if state is PullRequestState.MERGED else ""
    labels = [label for label in data.get("labels") or () if isinstance(label, dict)]
    return PullRequest(
        id=str(number),
        number=number,
        head_branch=branch(data.get("sourceRefName")),
        base_branch=branch(data.get("targetRefName")),
        head_sha=commit_id(data, "lastMergeSourceCommit"),
        state=state,
        title=str(data.get("title") or ""),
        body=str(data.get("description") or ""),
        labels=tuple(str(x["name"]) for x in labels if x.get("name") and x.get("active", True)),
        url=web_url(data),
        draft=bool(data.get("isDraft")),
        merge_sha=merged or None,
        author=str((data.get("createdBy") or {}).get("uniqueName") or ""),
    )


def project_id(data: Mapping[str, Any]) -> str:
    """The id of the project a pull request's repository is in (policy evaluations need it)."""
    return str(((data.get("repository") or {}).get("project") or {}).get("id") or "")


# --- statuses --------------------------------------------------------------------------


def key_of(context: Any) -> str:
    context = context if isinstance(context, dict) else {}
    genre, name = str(context.get("genre") or ""), str(context.get("name") or "")
    return f"{genre}/{name}" if genre else name


def context_of(key: str) -> dict[str, str]:
    genre, slash, name = key.partition("/")
    return {"genre": genre, "name": name} if slash and genre and name else {"name": key}


def _when(item: Mapping[str, Any]) -> datetime:
    for field in ("updatedDate", "creationDate"):
        value = item.get(field)
        if isinstance(value, str) and value:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
    return utcnow()


def latest_statuses(items: Iterable[Any], *, source: str) -> dict[str, CommitStatus]:
    """The newest status of each context (Azure lists every one posted; ids grow)."""
    newest: dict[str, Mapping[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        key = key_of(item.get("context"))
        kept = newest.get(key)
        if key and (kept is None or int(item.get("id") or 0) > int(kept.get("id") or 0)):
            newest[key] = item
    return {
        key: CommitStatus(
            key=key[:255],
            phase=PHASES.get(str(item.get("state")), Phase.PENDING),
            description=str(item.get("description") or item.get("state") or ""),
            url=str(item.get("targetUrl") or ""),
            source=source,
            updated_at=_when(item),
        )
        for key, item in newest.items()
    }


def status_body(status: CommitStatus) -> dict[str, Any]:
    """What ``POST .../statuses`` takes for one of the promoter's statuses."""
    body: dict[str, Any] = {
        "state": AZURE_STATE[status.phase],
        "description": status.description[:MAX_DESCRIPTION],
        "context": context_of(status.key),
    }
    if status.url:
        body["targetUrl"] = status.url
    return body


# --- reviewer votes --------------------------------------------------------------------


def _names(identity: Mapping[str, Any]) -> set[str]:
    """How a group may be named in ``teams``: ``[Project]\\Team``, ``Team``, its unique name."""
    display = str(identity.get("displayName") or "")
    return {display, display.rpartition("\\")[2], str(identity.get("uniqueName") or "")} - {""}


def review(item: Mapping[str, Any]) -> Review | None:
    """A reviewer's vote as a Review, or None when it decides nothing: a group (its vote
    is its members'), or a vote between (5 "approved with suggestions", 0, -5 "waiting
    for the author"). -10 rejects: it withdraws that reviewer's approval."""
    if item.get("isContainer"):
        return None
    user = str(item.get("uniqueName") or "")
    try:
        vote = int(item.get("vote") or 0)
    except (TypeError, ValueError):
        return None
    if not user or REJECTED < vote < APPROVED:
        return None
    groups = [g for g in item.get("votedFor") or () if isinstance(g, dict)]
    teams = sorted({name for group in groups for name in _names(group)})
    return Review(
        user=user,
        approved=vote >= APPROVED,
        teams=tuple(teams),
        name=str(item.get("displayName") or ""),
    )
