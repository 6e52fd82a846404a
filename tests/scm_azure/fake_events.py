"""The service hook deliveries the fake Azure DevOps sends, and the shapes it answers people in.

Each delivery is a genuine one of ``tests/fixtures/azure-devops/webhooks`` (``push.json``,
``pr_created.json``, ``pr_updated.json``) with the fake's values filled in: a fresh event
``id``, the subscription's ``subscriptionId`` and a growing ``notificationId`` (today's
deliveries carry both; the captures predate them), the repository, and the resource (the
pull request as the API shows it, or the push's ``refUpdates`` and new ``commits``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from tests.scm_azure import fake_git
from tests.scm_azure.fake_state import IDENTITY, FakeRepo, genuine, now

if TYPE_CHECKING:
    from tests.scm_azure.fake_azure import FakeAzure

FIXTURE = {
    "git.pullrequest.created": "webhooks/pr_created.json",
    "git.pullrequest.updated": "webhooks/pr_updated.json",
    "git.pullrequest.merged": "webhooks/pr_merged.json",
}
ZERO = "0" * 40


def repository(fake: FakeAzure, repo: FakeRepo) -> dict[str, Any]:
    """A ``GitRepository`` (``rest/repo.json``) as the fake serves it."""
    data = genuine("rest/repo.json")
    clone = fake.clone_url(repo)
    data.update(
        id=repo.id,
        name=repo.name,
        url=fake.api_url(repo),
        remoteUrl=clone,
        webUrl=clone,
        sshUrl=f"git@ssh.fabrikam.example:v3/fabrikam/{repo.project}/{repo.name}",
        defaultBranch="refs/heads/main",
    )
    data["project"].update(id=fake.project_id(repo.project), name=repo.project)
    return data


def _delivery(fake: FakeAzure, fixture: str, notification: int) -> dict[str, Any]:
    payload = genuine(fixture)
    payload.update(
        id=str(uuid.uuid4()),
        subscriptionId=fake.subscription,
        notificationId=notification,
        createdDate=now(),
    )
    return payload


def pull_request(
    fake: FakeAzure, event_type: str, resource: dict[str, Any], notification: int
) -> dict[str, Any]:
    payload = _delivery(fake, FIXTURE[event_type], notification)
    payload["eventType"] = event_type
    payload["resource"] = resource
    return payload


def push(
    fake: FakeAzure,
    repo: FakeRepo,
    updates: list[tuple[str, str | None, str]],
    notification: int,
    by: dict[str, str] | None,
) -> dict[str, Any]:
    """``git.push`` for ``(ref, before, after)`` updates, with the commits they brought."""
    payload = _delivery(fake, "webhooks/push.json", notification)
    resource = payload["resource"]
    template = resource["commits"][0]
    commits = []
    for _, before, after in updates:
        if after == ZERO:
            continue
        span = after if not before or before == ZERO else f"{before}..{after}"
        for sha in fake_git.git(repo.path, "rev-list", "-n", "100", span).split():
            commits.append(
                {**template, "commitId": sha, "url": f"{fake.api_url(repo)}/commits/{sha}"}
            )
    resource.update(
        commits=commits[:100],
        refUpdates=[
            {"name": ref, "oldObjectId": before or ZERO, "newObjectId": after}
            for ref, before, after in updates
        ],
        repository=repository(fake, repo),
        pushedBy={**resource["pushedBy"], **(by or IDENTITY)},
        pushId=fake.next_id(),
        date=now(),
    )
    return payload


def reviewer(person: dict[str, Any], vote: int) -> dict[str, Any]:
    """An ``IdentityRefWithVote``: a person's vote on a pull request."""
    return {
        "reviewerUrl": None,
        "vote": vote,
        "hasDeclined": False,
        "isFlagged": False,
        "isRequired": False,
        "id": person.get("id") or str(uuid.uuid4()),
        "displayName": person.get("displayName", ""),
        "uniqueName": person["uniqueName"],
        "imageUrl": "",
        "votedFor": person.get("votedFor", []),
        "isContainer": bool(person.get("isContainer")),
    }
