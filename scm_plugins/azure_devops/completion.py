"""Completing an Azure DevOps pull request: the head as the guard, the configured strategy.

``PATCH .../pullrequests/{id}`` with ``status: completed``, ``lastMergeSourceCommit`` set
to the head the promoter decided on, and ``completionOptions`` (``mergeStrategy``: one of
``noFastForward``, ``squash``, ``rebase``, ``rebaseMerge``; the source branch kept: it is the
hydrator's proposed branch). Azure refuses the completion when the source moved
(``LastMergeSourceCommit``: the head moved, read again) and when a blocking branch policy
is not met (TF401027); the latter is explained with the pull request's policy
evaluations (``GET _apis/policy/evaluations``), each blocking one that has not approved
named with its state. Azure may queue a completion: its answer is then still active, and
the pull request is read a few times, briefly, until it is completed, in conflict or
rejected (then it is said so) or the wait is over (a temporary refusal: the next
reconcile finds it merged). A completion retried after it went through (the answer was
lost) returns its merge commit. Calls: 1 when Azure completes at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from promoter.errors import ScmConflict, ScmError, ScmUnavailable
from scm_plugins.azure_devops import convert
from scm_plugins.azure_devops.client import AzureClient, segment
from scm_plugins.azure_devops.pulls import values
from scm_plugins.azure_devops.repos import Heads, Where

POLLS = (0.5, 1.0, 2.0)
"""Seconds between the reads of a completion Azure queued (3.5 s at most in all)."""
PASSED = frozenset({"approved", "notApplicable"})


def policy_reasons(evaluations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each enabled, blocking policy that has not approved, with its state: "Minimum number
    of reviewers: rejected", "Status (promoter/previous-environment): queued"."""
    reasons = []
    for item in evaluations:
        config = item.get("configuration") or {}
        if config.get("isEnabled") is False or config.get("isBlocking") is False:
            continue
        state = str(item.get("status") or "")
        if state in PASSED:
            continue
        name = str((config.get("type") or {}).get("displayName") or "a branch policy")
        settings = config.get("settings") or {}
        status = str(settings.get("statusName") or "")
        if status:
            genre = str(settings.get("statusGenre") or "")
            name += f" ({genre}/{status})" if genre else f" ({status})"
        reasons.append(f"{name}: {state or 'not evaluated'}")
    return reasons


class Completion:
    def __init__(
        self,
        client: AzureClient,
        heads: Heads,
        *,
        strategy: str,
        sleep: Callable[[float], None] = time.sleep,
        polls: Sequence[float] = POLLS,
    ) -> None:
        self._client = client
        self._heads = heads
        self._strategy = strategy
        self._sleep = sleep
        self._polls = polls

    def merge(self, where: Where, *, number: int, expected_head_sha: str, message: str) -> str:
        body = {
            "status": "completed",
            "lastMergeSourceCommit": {"commitId": expected_head_sha},
            "completionOptions": {
                "mergeStrategy": self._strategy,
                "mergeCommitMessage": message,
                "deleteSourceBranch": False,
                "bypassPolicy": False,
                "transitionWorkItems": False,
            },
        }
        path = f"{where.api}/pullrequests/{number}"
        try:
            data = self._client.request(
                "merge_pull_request", "PATCH", path, body=body, pr=number, sha=expected_head_sha
            )
        except ScmConflict as refused:
            if not refused.lasting:
                raise  # the head moved: the promoter reads the PR again
            data = self._read(where, number)
            if data.get("status") == "completed":
                return self._merged(where, number, expected_head_sha, data)
            raise self._explained(where, number, data, str(refused)) from refused
        for wait in (0.0, *self._polls):
            if wait:
                self._sleep(wait)
                data = self._read(where, number)
            if data.get("status") == "completed":
                return self._merged(where, number, expected_head_sha, data)
            self._refused(where, number, data)
        raise ScmConflict(f"pull request {number}: Azure DevOps has queued its completion")

    def _read(self, where: Where, number: int) -> dict[str, Any]:
        data = self._client.request(
            "get_pull_request", "GET", f"{where.api}/pullrequests/{number}", pr=number
        )
        if not isinstance(data, dict):
            raise ScmUnavailable(f"pull request {number}: Azure DevOps answered no object")
        return data

    def _merged(self, where: Where, number: int, expected: str, data: Mapping[str, Any]) -> str:
        self._heads.seen(where, data)
        head = convert.commit_id(data, "lastMergeSourceCommit")
        if head and head != expected:
            raise ScmConflict(f"pull request {number} was completed with another head, {head}")
        merged = convert.commit_id(data, "lastMergeCommit")
        if not merged:
            raise ScmUnavailable(f"pull request {number} completed without a merge commit yet")
        return merged

    def _refused(self, where: Where, number: int, data: Mapping[str, Any]) -> None:
        """Raise when the answer says the completion will not happen as things stand."""
        status, merge = str(data.get("status") or ""), str(data.get("mergeStatus") or "")
        if status == "abandoned":
            raise ScmConflict(f"pull request {number} was abandoned", lasting=True)
        if merge == "conflicts":
            raise ScmConflict(
                f"pull request {number} cannot be completed: merge conflicts", lasting=True
            )
        if merge in ("rejectedByPolicy", "failure"):
            said = str(data.get("mergeFailureMessage") or f"merge {merge}")
            raise self._explained(where, number, data, said)

    def _explained(
        self, where: Where, number: int, data: Mapping[str, Any], said: str
    ) -> ScmConflict:
        """A lasting refusal saying which blocking policies have not approved."""
        project = convert.project_id(data) or self._heads.project_id(where)
        reasons: list[str] = []
        if project:
            artifact = f"vstfs:///CodeReview/CodeReviewId/{project}/{number}"
            try:
                answer = self._client.request(
                    "get_policy_evaluations",
                    "GET",
                    f"/{segment(where.project)}/_apis/policy/evaluations",
                    params={"artifactId": artifact},
                    version=f"{self._client.api_version}-preview.1",
                    pr=number,
                )
                reasons = policy_reasons(values(answer))
            except ScmError:
                reasons = []  # Azure's own words below say enough
        text = "; ".join(reasons) if reasons else said
        return ScmConflict(f"pull request {number} cannot be completed: {text}", lasting=True)
