"""End to end on Azure DevOps: the daemon, this plugin, the fake Azure DevOps and real git.

The daemon clones and pushes over HTTP with the PAT, opens and completes pull requests on
the fake, which merges for real and sends its service hooks back (``azure_ci``). Failure
paths first: a forged delivery, a head that moves under a completion, a 429.
"""

from __future__ import annotations

from typing import Any

import pytest

from promoter.cli.sandbox import git
from promoter.metrics import REGISTRY
from tests.support import ENVIRONMENTS, wait_for

from .azure_ci import AzureCI

DEV, STAGING, PROD = ENVIRONMENTS


def calls(operation: str | None = None, outcome: str | None = None) -> float:
    """``promoter_scm_calls_total`` of the Azure DevOps plugin so far."""
    total = 0.0
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name != "promoter_scm_calls_total" or s.labels["provider"] != "azure-devops":
                continue
            if operation in (None, s.labels["operation"]) and outcome in (
                None,
                s.labels["outcome"],
            ):
                total += s.value
    return total


def operations() -> dict[str, float]:
    found: dict[str, float] = {}
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name == "promoter_scm_calls_total" and s.labels["provider"] == "azure-devops":
                found[s.labels["operation"]] = found.get(s.labels["operation"], 0) + s.value
    return found


def _moves(delivery: dict[str, Any], ref: str) -> bool:
    updates = delivery["resource"].get("refUpdates") or []
    return delivery["eventType"] == "git.push" and ref in [u["name"] for u in updates]


def test_a_forged_service_hook_is_refused_and_wakes_nothing(harness: AzureCI) -> None:
    h = harness
    h.held = True  # Azure's own deliveries of the push are held back
    h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    [push] = [p for p in h.withheld if _moves(p, "refs/heads/main")]
    assert h.deliver(push, password="forged") == 401
    h.settle()
    assert h.pulls(DEV) == []  # nothing woke the daemon: no pull request
    h.release()
    h.open_pull(DEV)


def test_a_head_that_moves_under_the_completion_is_refused_and_never_merged(
    harness: AzureCI,
) -> None:
    h = harness
    h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    pr = h.open_pull(DEV)
    stale = pr["lastMergeSourceCommit"]["commitId"]
    moved: list[str] = []

    def hydrator_pushes_as_the_completion_arrives(method: str, path: str, body: Any) -> None:
        if (body or {}).get("status") == "completed" and not moved:
            moved.append(h.hydrate("1.2.0", "Bump guestbook to 1.2.0"))

    h.fake.before = hydrator_pushes_as_the_completion_arrives
    h.status(stale, "ci")  # CI passes the head the daemon knows
    refused = wait_for(
        lambda: [
            c
            for c in h.fake.calls
            if (c.body or {}).get("lastMergeSourceCommit", {}).get("commitId") == stale
        ],
        what="a completion with the stale head",
    )
    assert [c.status for c in refused] == [400]
    second = moved[0]
    pr = h.promote(DEV, second)
    assert pr["status"] == "completed"
    parents = git(h.gitops.path, "rev-list", "--parents", "-n1", DEV).split()[1:]
    assert parents[1] == h.gitops.tip(f"{DEV}-next") != stale
    assert [c.status for c in h.fake.calls if c == refused[0]] == [400]  # never retried


def test_a_429_is_waited_out_before_the_next_call_not_retried_in_a_loop(
    harness: AzureCI,
) -> None:
    h = harness
    limited = calls(outcome="rate_limited")
    h.fake.fail_next(
        "POST",
        r"/pullrequests$",
        429,
        headers={"Retry-After": "1", "X-RateLimit-Resource": "Core:ATCPU"},
        message="TF400733: The request has been canceled: Request was blocked",
        type_key="RequestBlockedException",
    )
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    pr = h.promote(DEV, change)
    assert pr["status"] == "completed"
    answered = [c for c in h.fake.calls if c.status == 429]
    assert len(answered) == 1
    after = [c for c in h.fake.calls if c.at > answered[0].at]
    assert after and after[0].at - answered[0].at >= 0.9, "a call before Retry-After passed"
    opens = [
        c
        for c in h.fake.calls
        if c.method == "POST" and (c.body or {}).get("targetRefName") == f"refs/heads/{DEV}"
    ]
    assert [c.status for c in opens] == [429, 201]
    assert calls(outcome="rate_limited") == limited + 1


def test_a_change_goes_dev_staging_prod_through_azure_devops_pull_requests(
    harness: AzureCI,
) -> None:
    h = harness
    before, ops_before = calls(), operations()
    posts = 0
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        target_before = h.gitops.tip(branch)
        pr = h.promote(branch, change)
        posts += 2
        assert pr["status"] == "completed"
        assert "promotion" in [label["name"] for label in pr["labels"]]
        parents = git(h.gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents == [target_before, h.gitops.tip(f"{branch}-next")]
        assert pr["lastMergeCommit"]["commitId"] == h.gitops.tip(branch)
    h.settle()
    for branch in (STAGING, PROD):  # rule 4 shown on the pull request, genre promoter
        [pr] = h.pulls(branch)
        mine = h.repo.pr_statuses[pr["pullRequestId"]]
        assert {(s["context"]["genre"], s["context"]["name"]) for s in mine} == {
            ("promoter", "previous-environment")
        }
        assert {s["iterationId"] for s in mine} == {1}
        assert mine[-1]["state"] == "succeeded"
    used = calls() - before - posts
    ops = {op: n - ops_before.get(op, 0) for op, n in operations().items()}
    print(f"\nAzure DevOps calls per environment promotion: {used / len(ENVIRONMENTS):.2f}")
    for op in sorted(ops):
        print(f"  {op}: {ops[op]}")
    assert used <= 4 * len(ENVIRONMENTS), ops


@pytest.mark.parametrize("harness", [{"merge_strategy": "squash"}], indirect=True)
def test_squash_completions_promote_too(harness: AzureCI) -> None:
    h = harness
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        target_before = h.gitops.tip(branch)
        h.promote(branch, change)
        parents = git(h.gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents == [target_before]  # one squashed commit
        tree = git(h.gitops.path, "rev-parse", f"{branch}^{{tree}}")
        assert tree == git(h.gitops.path, "rev-parse", f"{branch}-next^{{tree}}")


@pytest.mark.parametrize("harness", [{"prod": ", autoMerge: false"}], indirect=True)
def test_a_pull_request_completed_by_a_person_is_taken_as_the_promotion(
    harness: AzureCI,
) -> None:
    h = harness
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in (DEV, STAGING):
        h.promote(branch, change)
    pr = h.open_pull(PROD)
    h.status(pr["lastMergeSourceCommit"]["commitId"], "ci")
    wait_for(lambda: h.env(PROD)["state"] == "ready", what="prod waiting for a person")
    h.settle()
    assert h.pulls(PROD)[0]["status"] == "active"
    person = {"uniqueName": "ada@fabrikam.example", "displayName": "Ada Lovelace"}
    h.fake.person_completes(h.repo, pr["pullRequestId"], person)
    wait_for(lambda: h.active_dry(PROD) == change, what="prod at the change")


def test_an_abandoned_pull_request_is_opened_again(harness: AzureCI) -> None:
    h = harness
    change = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    first = h.open_pull(DEV)
    h.fake.person_abandons(h.repo, first["pullRequestId"])
    again = wait_for(
        lambda: next((p for p in h.pulls(DEV) if p["status"] == "active" and p != first), None),
        what="a new pull request",
    )
    assert again["pullRequestId"] != first["pullRequestId"]
    h.promote(DEV, change)


REVERT = ", autoRevert: {enabled: true, settleTime: 0.3s, autoMerge: true}"


@pytest.mark.parametrize("harness", [{"staging": REVERT}], indirect=True)
def test_a_failing_environment_is_reverted_by_a_pull_request_on_azure_devops(
    harness: AzureCI,
) -> None:
    h = harness
    good = h.hydrate("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        h.promote(branch, good)
    wait_for(lambda: h.env(STAGING)["lastHealthy"], what="staging recorded healthy")
    healthy_tree = git(h.gitops.path, "rev-parse", f"{STAGING}^{{tree}}")
    bad = h.hydrate("1.2.0", "Bump guestbook to 1.2.0")
    h.promote(DEV, bad)
    pr = h.open_pull(STAGING)
    h.status(pr["lastMergeSourceCommit"]["commitId"], "ci")
    wait_for(lambda: h.active_dry(STAGING) == bad, what="staging at the bad change")
    h.status(h.gitops.tip(STAGING), "health", "failure")
    wait_for(lambda: h.active_dry(STAGING) == good, what="staging reverted")
    [revert] = [p for p in h.pulls(STAGING) if "revert" in [x["name"] for x in p["labels"]]]
    assert revert["status"] == "completed"
    assert revert["sourceRefName"].startswith(f"refs/heads/{STAGING}-revert-")
    assert git(h.gitops.path, "rev-parse", f"{STAGING}^{{tree}}") == healthy_tree
    pushed = [ref for event, _, refs in h.answers if event == "git.push" for ref in refs]
    assert revert["sourceRefName"] in pushed  # pushed through Azure's git: its git.push came
