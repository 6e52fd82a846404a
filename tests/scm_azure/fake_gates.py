"""The fake Azure DevOps' gates: commit and pull-request statuses, iterations, votes, policies.

No genuine capture of these answers was found (tests/fixtures/azure-devops/README.md): they
are built from the field names of Microsoft's REST reference (``GitStatus``,
``GitPullRequestIteration``, ``IdentityRefWithVote``, ``PolicyEvaluationRecord``), and
behave as Azure documents them: a status's ``state`` is one of ``GitStatusState``; a list of
commit statuses with ``latestOnly`` holds the newest of each context; a pull request status
that a status policy with "reset status whenever there are new changes" watches must name
its iteration, else it is refused (403, the genuine message); a commit-status list carries
an ETag and answers 304 to a matching ``If-None-Match``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from tests.scm_azure import fake_git
from tests.scm_azure.fake_pulls import refresh
from tests.scm_azure.fake_state import (
    IDENTITY,
    Answer,
    AzureError,
    FakeRepo,
    Policy,
    invalid,
    not_found,
    now,
)

if TYPE_CHECKING:
    from tests.scm_azure.fake_azure import FakeAzure

STATES = {
    "notSet",
    "pending",
    "succeeded",
    "failed",
    "error",
    "notApplicable",
    "partiallySucceeded",
}
REJECTED_BY_POLICY = (
    "Pull request status rejected by status policy. Policy configuration requires status "
    "to be posted on iteration"
)
ARTIFACT = re.compile(r"^vstfs:///CodeReview/CodeReviewId/([0-9a-f-]+)/(\d+)$")


def _status(fake: FakeAzure, body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    context = body.get("context") or {}
    if body.get("state") not in STATES or not isinstance(context, dict) or not context.get("name"):
        raise invalid("status")
    return {
        "id": fake.next_id(),
        "state": body["state"],
        "description": str(body.get("description") or ""),
        "context": {
            "name": context["name"],
            **({"genre": context["genre"]} if context.get("genre") else {}),
        },
        "creationDate": now(),
        "updatedDate": now(),
        "createdBy": dict(IDENTITY),
        "targetUrl": body.get("targetUrl"),
        **extra,
    }


def _latest(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for item in sorted(items, key=lambda i: -int(i["id"])):
        seen.setdefault((item["context"].get("genre", ""), item["context"]["name"]), item)
    return list(seen.values())


def _listed(items: list[dict[str, Any]], if_none_match: str) -> Answer:
    body = {"value": items, "count": len(items)}
    etag = '"' + hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest() + '"'
    if if_none_match == etag:
        return Answer(304, None, {"ETag": etag})
    return Answer(200, body, {"ETag": etag})


def commit_statuses(repo: FakeRepo, sha: str, query: dict[str, str], if_none_match: str) -> Answer:
    if not fake_git.git(repo.path, "cat-file", "-t", sha, check=False) == "commit":
        raise AzureError(
            404,
            f"TF401175:The specified commit {sha} was not found.",
            "GitCommitDoesNotExistException",
        )
    items = sorted(repo.commit_statuses.get(sha, []), key=lambda i: -int(i["id"]))
    if query.get("latestOnly", "").lower() == "true":
        items = _latest(items)
    return _listed(items, if_none_match)


def post_commit_status(fake: FakeAzure, repo: FakeRepo, sha: str, body: dict[str, Any]) -> Answer:
    status = _status(fake, body, url=f"{fake.api_url(repo)}/commits/{sha}/statuses")
    repo.commit_statuses.setdefault(sha, []).append(status)
    return Answer(201, status)


def pr_statuses(repo: FakeRepo, number: int, if_none_match: str) -> Answer:
    if number not in repo.pulls:
        raise not_found()
    return _listed(
        sorted(repo.pr_statuses.get(number, []), key=lambda i: int(i["id"])), if_none_match
    )


def post_pr_status(fake: FakeAzure, repo: FakeRepo, number: int, body: dict[str, Any]) -> Answer:
    if number not in repo.pulls:
        raise not_found()
    refresh(repo, number)
    iteration = body.get("iterationId")
    if iteration is not None and not 1 <= int(iteration) <= len(repo.iterations.get(number, [])):
        raise invalid("iterationId")
    context = body.get("context") or {}
    watched = [
        p
        for p in repo.policies
        if p.kind == "status"
        and p.reset
        and (p.genre, p.name) == (context.get("genre", ""), context.get("name"))
    ]
    if watched and iteration is None:
        raise AzureError(403, REJECTED_BY_POLICY, "GitPullRequestStatusRejectedByPolicyException")
    extra = {"iterationId": int(iteration)} if iteration is not None else {}
    status = _status(fake, body, **extra)
    repo.pr_statuses.setdefault(number, []).append(status)
    return Answer(201, status)


def iterations(repo: FakeRepo, number: int) -> Answer:
    if number not in repo.pulls:
        raise not_found()
    refresh(repo, number)
    found = repo.iterations.get(number, [])
    return Answer(200, {"value": found, "count": len(found)})


def reviewers(repo: FakeRepo, number: int) -> Answer:
    if number not in repo.pulls:
        raise not_found()
    found = repo.reviewers.get(number, [])
    return Answer(200, {"value": found, "count": len(found)})


def evaluate(repo: FakeRepo, number: int, policy: Policy) -> str:
    """``approved``, ``rejected`` or ``queued``: where ``policy`` stands on a pull request."""
    if policy.kind == "reviewers":
        author = repo.pulls[number]["createdBy"].get("uniqueName")
        votes = [r for r in repo.reviewers.get(number, []) if not r.get("isContainer")]
        if any(int(r["vote"]) <= -10 for r in votes):
            return "rejected"
        approving = [r for r in votes if int(r["vote"]) >= 5 and r.get("uniqueName") != author]
        return "approved" if len(approving) >= policy.count else "rejected"
    refresh(repo, number)
    latest = len(repo.iterations.get(number, []))
    mine = [
        s
        for s in repo.pr_statuses.get(number, [])
        if (s["context"].get("genre", ""), s["context"]["name"]) == (policy.genre, policy.name)
        and (not policy.reset or s.get("iterationId") == latest)
    ]
    if not mine:
        return "queued"
    state = max(mine, key=lambda s: int(s["id"]))["state"]
    return {"succeeded": "approved", "notApplicable": "notApplicable"}.get(
        state, "queued" if state in ("pending", "notSet") else "rejected"
    )


def record(fake: FakeAzure, repo: FakeRepo, number: int, policy: Policy) -> dict[str, Any]:
    name = {"reviewers": "Minimum number of reviewers", "status": "Status"}[policy.kind]
    settings: dict[str, Any] = (
        {"minimumApproverCount": policy.count, "creatorVoteCounts": False}
        if policy.kind == "reviewers"
        else {"statusGenre": policy.genre, "statusName": policy.name, "policyApplicability": None}
    )
    return {
        "configuration": {
            "id": policy.id,
            "isEnabled": True,
            "isBlocking": True,
            "isDeleted": False,
            "type": {"id": f"fake-{policy.kind}", "displayName": name},
            "settings": settings,
        },
        "artifactId": f"vstfs:///CodeReview/CodeReviewId/{fake.project_id(repo.project)}/{number}",
        "evaluationId": f"{policy.id}-{number}",
        "startedDate": now(),
        "status": evaluate(repo, number, policy),
    }


def evaluations(fake: FakeAzure, project: str, query: dict[str, str]) -> Answer:
    found = ARTIFACT.match(query.get("artifactId", ""))
    if found is None or found.group(1) != fake.project_id(project):
        raise invalid("artifactId")
    number = int(found.group(2))
    repo = next(
        (r for r in fake.repositories() if r.project == project and number in r.pulls), None
    )
    if repo is None:
        raise not_found()
    items = [record(fake, repo, number, p) for p in repo.policies]
    return Answer(200, {"value": items, "count": len(items)})
