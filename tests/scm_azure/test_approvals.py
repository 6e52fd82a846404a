"""Four eyes on Azure DevOps: reviewer votes as the approval gate, end to end on the fake.

A vote of 10 approves; 5 ("approved with suggestions") does not count; -10 rejects and
withdraws that reviewer's approval. The pull request's author (the PAT's owner) and the
authors of the change it promotes never count. Each vote reaches the daemon as Azure's
``git.pullrequest.updated`` service hook.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ENVIRONMENTS, wait_for

from .azure_ci import AzureCI
from .fake_state import IDENTITY

DEV, STAGING, PROD = ENVIRONMENTS
APPROVAL = "promoter/approval"
ADA = {"uniqueName": "ada@fabrikam.example", "displayName": "Ada Lovelace"}
GRACE = {"uniqueName": "grace@fabrikam.example", "displayName": "Grace Hopper"}
LINUS = {
    "uniqueName": "linus@fabrikam.example",
    "displayName": "Linus T",
    "votedFor": [{"displayName": "[Fabrikam Fiber]\\Releasers", "uniqueName": "releasers"}],
}


def gate(h: AzureCI) -> dict[str, Any]:
    found: dict[str, Any] = next(g for g in h.env(PROD)["gates"] if g["name"] == APPROVAL)
    return found


def reason_says(h: AzureCI, words: str) -> dict[str, Any]:
    return wait_for(lambda: words in (g := gate(h))["reason"] and g, what=f"the gate: {words}")


@pytest.mark.parametrize("harness", [{"prod": ", gates: [{approval: {count: 1}}]"}], indirect=True)
def test_only_a_vote_of_ten_by_someone_else_than_the_authors_approves(
    harness: AzureCI, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada Lovelace")  # the dry change's author
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ada@fabrikam.example")
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in (DEV, STAGING):
        h.promote(branch, change)
    pr = h.open_pull(PROD)
    number = pr["pullRequestId"]
    reason_says(h, "waiting for 1 approval (0 so far)")

    h.fake.vote(h.repo, number, dict(IDENTITY), 10)  # the PR's author: the PAT's owner
    reason_says(h, "promoter@fabrikam.example opened the pull request")
    h.fake.vote(h.repo, number, ADA, 10)  # the change's author
    reason_says(h, "ada@fabrikam.example wrote a change being promoted")
    h.fake.vote(h.repo, number, GRACE, 5)  # approved with suggestions: not an approval
    h.settle()
    assert "(0 so far" in gate(h)["reason"]

    h.fake.vote(h.repo, number, GRACE, 10)
    reason_says(h, "approved by grace@fabrikam.example")
    h.fake.vote(h.repo, number, GRACE, -10)  # rejected: the approval is withdrawn
    reason_says(h, "(0 so far")
    h.status(pr["lastMergeSourceCommit"]["commitId"], "ci")
    h.settle()
    assert h.pulls(PROD)[0]["status"] == "active"  # CI green, but nobody approves

    h.fake.vote(h.repo, number, LINUS, 10)
    wait_for(lambda: h.active_dry(PROD) == change, what="prod at the change")
    assert h.pulls(PROD)[0]["status"] == "completed"


@pytest.mark.parametrize(
    "harness",
    [{"prod": ", gates: [{approval: {count: 1, teams: ['Releasers']}}]"}],
    indirect=True,
)
def test_an_approval_gate_with_teams_counts_the_votes_cast_for_those_groups(
    harness: AzureCI,
) -> None:
    h = harness
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in (DEV, STAGING):
        h.promote(branch, change)
    pr = h.open_pull(PROD)
    h.status(pr["lastMergeSourceCommit"]["commitId"], "ci")
    h.fake.vote(h.repo, pr["pullRequestId"], GRACE, 10)  # in no group the gate asks for
    h.settle()
    assert "(0 so far" in gate(h)["reason"]
    h.fake.vote(h.repo, pr["pullRequestId"], LINUS, 10)  # votes for [Fabrikam Fiber]\Releasers
    wait_for(lambda: h.active_dry(PROD) == change, what="prod at the change")
