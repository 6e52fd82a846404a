"""The fake Azure DevOps' pull requests: search, create, update, abandon, complete, label, comment.

A pull request is the genuine ``GitPullRequest`` of ``tests/fixtures/azure-devops/rest/pr.json``
with the fake's values filled in; while it is active, its source and target commits, its
merge status (``conflicts`` when ``git merge-tree`` says so) and its iterations (one more
each time its source branch moved) are read from git whenever it is shown. Azure's rules
the promoter relies on: one active pull request per source and target (409, TF401179); a
completion whose ``lastMergeSourceCommit`` is not the source's head is refused (400); a
completion that conflicts leaves it active with ``mergeStatus: conflicts``; one that a
blocking branch policy refuses leaves it active with ``mergeStatus: rejectedByPolicy`` (what
Azure answers then is not documented: the plugin reads the policy evaluations to say why,
whatever the answer); ``complete_later`` queues a completion that the next read finishes.
A pull request created is announced twice, as Azure does: created, then its merge commit
made ("merge attempted", ``git.pullrequest.merged``).
"""

from __future__ import annotations

import copy
import uuid
from typing import TYPE_CHECKING, Any

from tests.scm_azure import fake_git
from tests.scm_azure.fake_state import (
    IDENTITY,
    Answer,
    AzureError,
    FakeRepo,
    genuine,
    not_found,
    now,
)

if TYPE_CHECKING:
    from tests.scm_azure.fake_azure import FakeAzure

HEADS = "refs/heads/"
STALE_HEAD = (
    "Invalid argument value.\r\nParameter name: You must specify a valid "
    "LastMergeSourceCommit to perform this operation"
)
NOT_EDITABLE = "TF401181: The pull request cannot be edited due to its state."


def _branch(ref: Any) -> str:
    return str(ref or "").removeprefix(HEADS)


def _commit(fake: FakeAzure, repo: FakeRepo, sha: str | None) -> dict[str, str] | None:
    if not sha:
        return None
    return {"commitId": sha, "url": f"{fake.api_url(repo)}/commits/{sha}"}


def refresh(repo: FakeRepo, number: int) -> None:
    """An active pull request gets a new iteration each time its source branch moved."""
    pr = repo.pulls[number]
    if pr["status"] != "active":
        return
    head = fake_git.tip(repo.path, _branch(pr["sourceRefName"]))
    target = fake_git.tip(repo.path, _branch(pr["targetRefName"]))
    made = repo.iterations.setdefault(number, [])
    if head and (not made or made[-1]["sourceRefCommit"]["commitId"] != head):
        made.append(
            {
                "id": len(made) + 1,
                "description": "",
                "author": dict(IDENTITY),
                "createdDate": now(),
                "updatedDate": now(),
                "sourceRefCommit": {"commitId": head},
                "targetRefCommit": {"commitId": target or ""},
                "commonRefCommit": {"commitId": target or ""},
                "hasMoreCommits": False,
                "reason": "push" if made else "create",
            }
        )


def view(fake: FakeAzure, repo: FakeRepo, number: int) -> dict[str, Any]:
    """The pull request as Azure shows it now (a queued completion is finished first)."""
    if number in repo.queued:
        repo.queued.discard(number)
        finish(fake, repo, number)
    refresh(repo, number)
    pr = copy.deepcopy(repo.pulls[number])
    if pr["status"] == "active":
        head = fake_git.tip(repo.path, _branch(pr["sourceRefName"]))
        target = fake_git.tip(repo.path, _branch(pr["targetRefName"]))
        pr["lastMergeSourceCommit"] = _commit(fake, repo, head)
        pr["lastMergeTargetCommit"] = _commit(fake, repo, target)
        clean = head and target and fake_git.merged_tree(repo.path, target, head) is not None
        if not clean:
            pr["mergeStatus"] = "conflicts"
        elif pr.get("mergeStatus") not in ("queued", "rejectedByPolicy"):
            pr["mergeStatus"] = "succeeded"
    pr["reviewers"] = copy.deepcopy(repo.reviewers.get(number, []))
    return pr


def search(fake: FakeAzure, repo: FakeRepo, query: dict[str, str]) -> Answer:
    status = query.get("searchCriteria.status", "active")
    source, target = (
        query.get("searchCriteria.sourceRefName"),
        query.get("searchCriteria.targetRefName"),
    )
    found = []
    for number, pr in sorted(repo.pulls.items(), reverse=True):  # newest first, as Azure
        if status != "all" and pr["status"] != status:
            continue
        if (source and pr["sourceRefName"] != source) or (target and pr["targetRefName"] != target):
            continue
        found.append(view(fake, repo, number))
    top = int(query.get("$top", 101))
    return Answer(200, {"value": found[:top], "count": len(found[:top])})


def create(fake: FakeAzure, repo: FakeRepo, body: dict[str, Any]) -> Answer:
    source, target = str(body.get("sourceRefName") or ""), str(body.get("targetRefName") or "")
    head, base = fake_git.tip(repo.path, _branch(source)), fake_git.tip(repo.path, _branch(target))
    if not (source.startswith(HEADS) and target.startswith(HEADS) and head and base):
        raise AzureError(
            400,
            "TF401398: The pull request cannot be activated because the source and/or the "
            "target branch no longer exists, or the requested refs are not branches",
            "InvalidArgumentValueException",
        )
    for pr in repo.pulls.values():
        if pr["status"] == "active" and (pr["sourceRefName"], pr["targetRefName"]) == (
            source,
            target,
        ):
            raise AzureError(
                409,
                "TF401179: An active pull request for the source and target branch already exists.",
                "GitPullRequestExistsException",
            )
    number = fake.next_id()
    pr = genuine("rest/pr.json")
    for gone in ("closedDate", "lastMergeCommit", "completionOptions"):
        pr.pop(gone, None)
    pr.update(
        repository=fake.repository_json(repo),
        pullRequestId=number,
        codeReviewId=number,
        status="active",
        createdBy={**pr["createdBy"], **IDENTITY},
        creationDate=now(),
        title=str(body.get("title") or ""),
        description=str(body.get("description") or ""),
        sourceRefName=source,
        targetRefName=target,
        mergeStatus="succeeded",
        isDraft=bool(body.get("isDraft")),
        mergeId=str(uuid.uuid4()),
        labels=[_label(x.get("name")) for x in body.get("labels") or () if x.get("name")],
        url=f"{fake.api_url(repo)}/pullRequests/{number}",
        artifactId=f"vstfs:///Git/PullRequestId/{fake.project_id(repo.project)}%2f{repo.id}%2f{number}",
    )
    repo.pulls[number] = pr
    fake.emit(repo, "git.pullrequest.created", view(fake, repo, number))
    fake.emit(repo, "git.pullrequest.merged", view(fake, repo, number))  # its merge commit
    return Answer(201, view(fake, repo, number))


def _label(name: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "name": str(name), "active": True}


def update(fake: FakeAzure, repo: FakeRepo, number: int, body: dict[str, Any]) -> Answer:
    pr = repo.pulls.get(number)
    if pr is None:
        raise not_found()
    if body.get("status") == "completed":
        return complete(fake, repo, number, body)
    if pr["status"] != "active":
        raise AzureError(409, NOT_EDITABLE, "GitPullRequestCannotBeEditedException")
    if len(str(body.get("description") or "")) > 4000:
        raise AzureError(
            400, "The description is limited to 4000 characters.", "InvalidArgumentValueException"
        )
    for field in ("title", "description"):
        if field in body:
            pr[field] = str(body[field])
    if body.get("status") == "abandoned":
        pr.update(status="abandoned", closedDate=now(), closedBy=dict(IDENTITY))
    fake.emit(repo, "git.pullrequest.updated", view(fake, repo, number))
    return Answer(200, view(fake, repo, number))


def complete(fake: FakeAzure, repo: FakeRepo, number: int, body: dict[str, Any]) -> Answer:
    pr = repo.pulls[number]
    if pr["status"] != "active":
        raise AzureError(409, NOT_EDITABLE, "GitPullRequestCannotBeEditedException")
    expected = (body.get("lastMergeSourceCommit") or {}).get("commitId")
    if not expected or expected != fake_git.tip(repo.path, _branch(pr["sourceRefName"])):
        raise AzureError(400, STALE_HEAD, "InvalidArgumentValueException")
    options = dict(body.get("completionOptions") or {})
    pr["completionOptions"] = options
    current = view(fake, repo, number)
    if current["mergeStatus"] == "conflicts":
        pr["mergeStatus"] = "conflicts"
        return Answer(200, current)
    if not options.get("bypassPolicy") and fake.failing_policies(repo, number):
        pr["mergeStatus"] = "rejectedByPolicy"
        return Answer(200, view(fake, repo, number))
    if fake.complete_later:
        pr.update(mergeStatus="queued", completionQueueTime=now())
        repo.queued.add(number)
        return Answer(200, {**current, "mergeStatus": "queued"})
    finish(fake, repo, number)
    return Answer(200, view(fake, repo, number))


def finish(fake: FakeAzure, repo: FakeRepo, number: int, by: dict[str, str] | None = None) -> None:
    """The completion itself: the target branch moves, the pull request is completed."""
    pr = repo.pulls[number]
    options = pr.get("completionOptions") or {}
    strategy = options.get("mergeStrategy") or (
        "squash" if options.get("squashMerge") else "noFastForward"
    )
    branch = _branch(pr["targetRefName"])
    head = fake_git.tip(repo.path, _branch(pr["sourceRefName"]))
    target = fake_git.tip(repo.path, branch)
    assert head and target
    message = options.get("mergeCommitMessage") or f"Merged PR {number}: {pr['title']}"
    try:
        merged = fake_git.complete(
            repo.path, strategy=strategy, branch=branch, target=target, source=head, message=message
        )
    except (fake_git.Conflict, fake_git.Moved):
        pr["mergeStatus"] = "conflicts"
        return
    pr.update(
        status="completed",
        mergeStatus="succeeded",
        closedDate=now(),
        closedBy=dict(by or IDENTITY),
        lastMergeSourceCommit=_commit(fake, repo, head),
        lastMergeTargetCommit=_commit(fake, repo, target),
        lastMergeCommit=_commit(fake, repo, merged),
    )
    fake.pushed(repo, [(HEADS + branch, target, merged)], by=by)
    fake.emit(repo, "git.pullrequest.updated", view(fake, repo, number))


def add_label(repo: FakeRepo, number: int, body: dict[str, Any]) -> Answer:
    pr = repo.pulls.get(number)
    if pr is None or not body.get("name"):
        raise not_found()
    label = next((x for x in pr["labels"] if x["name"] == body["name"]), None)
    if label is None:
        label = _label(body["name"])
        pr["labels"].append(label)
    return Answer(200, label)


def remove_label(repo: FakeRepo, number: int, name: str) -> Answer:
    pr = repo.pulls.get(number)
    kept = [x for x in (pr or {}).get("labels", []) if x["name"] != name]
    if pr is None or len(kept) == len(pr["labels"]):
        raise AzureError(
            404, f"TF401445: The label {name} does not exist.", "WebApiTagNotFoundException"
        )
    pr["labels"] = kept
    return Answer(204)


def add_thread(fake: FakeAzure, repo: FakeRepo, number: int, body: dict[str, Any]) -> Answer:
    if number not in repo.pulls or not body.get("comments"):
        raise not_found()
    thread = {
        "id": fake.next_id(),
        "status": body.get("status", "active"),
        "comments": body["comments"],
        "publishedDate": now(),
    }
    repo.threads.setdefault(number, []).append(thread)
    return Answer(200, thread)
