"""The merge-queue GraphQL the plugin sends, and what the fake answers, against GitHub's
published schema (``tests/fixtures/github/graphql``): each selected field exists on its
type, the mutation's input fields exist, and the enum values used are GitHub's."""

from __future__ import annotations

import re

from scm_plugins.github import queue
from tests.fixture_paths import FIXTURES

SCHEMA = (FIXTURES / "github" / "graphql" / "schema.excerpt.graphql").read_text()


def fields(kind: str) -> set[str]:
    """The field (or enum value) names of ``type``/``enum``/``input`` ``kind`` in the schema."""
    body = re.search(rf"(?:type|enum|input) {kind}\b[^{{]*\{{(.*?)\n\}}", SCHEMA, re.S)
    assert body, kind
    text = re.sub(r'"""(?:(?!""").)*"""', "", body.group(1), flags=re.S)
    return {m.group(1) for m in re.finditer(r"^\s+(\w+)", text, re.M)}


def test_the_read_selects_only_fields_github_has() -> None:
    assert {"isInMergeQueue", "mergeQueueEntry", "timelineItems", "id"} <= fields("PullRequest")
    assert {"state", "position", "headCommit"} <= fields("MergeQueueEntry")
    assert {"reason", "createdAt"} <= fields("RemovedFromMergeQueueEvent")
    assert "state" in fields("StatusCheckRollup")
    assert "REMOVED_FROM_MERGE_QUEUE_EVENT" in fields("PullRequestTimelineItemsItemType")
    for name in (
        "isInMergeQueue",
        "mergeQueueEntry",
        "statusCheckRollup",
        "RemovedFromMergeQueueEvent",
    ):
        assert name in queue.ENTRY


def test_the_mutation_uses_the_head_guard_github_offers() -> None:
    assert {"pullRequestId", "expectedHeadOid"} <= fields("EnqueuePullRequestInput")
    assert "mergeQueueEntry" in fields("EnqueuePullRequestPayload")
    assert "expectedHeadOid: $head" in queue.ENQUEUE


def test_the_dequeue_names_the_pull_request_by_the_id_github_asks_for() -> None:
    assert "id" in fields("DequeuePullRequestInput")
    assert "pullRequestId" not in fields("DequeuePullRequestInput")
    assert "mergeQueueEntry" in fields("DequeuePullRequestPayload")
    assert "dequeuePullRequest(input: {id: $id})" in queue.DEQUEUE


def test_a_merged_pull_request_is_read_from_its_state() -> None:
    assert "state" in fields("PullRequest") and "state" in queue.ENTRY
    assert {"MERGED", "OPEN", "CLOSED"} == fields("PullRequestState")


def test_the_fakes_states_are_githubs() -> None:
    from .fake_queue import QueueRoutes

    source = __import__("inspect").getsource(QueueRoutes)
    states = set(re.findall(r'"state": "([A-Z_]+)"', source))
    checks = set(re.findall(r'"checks": "([A-Z_]+)"', source))
    assert states and states <= fields("MergeQueueEntryState")
    assert checks and checks <= fields("StatusState")


def test_the_status_rollup_read_selects_only_fields_github_has() -> None:
    from scm_plugins.github import rollup

    query = rollup.ROLLUP
    assert "statusCheckRollup" in fields("Commit") and "object" in fields("Repository")
    assert {"contexts"} <= fields("StatusCheckRollup")
    assert {"nodes", "pageInfo"} <= fields("StatusCheckRollupContextConnection")
    assert {"hasNextPage", "endCursor"} <= fields("PageInfo")
    status = re.search(r"on StatusContext \{([^}]*)\}", query)
    check = re.search(r"on CheckRun \{([^}]*)\}", query)
    assert status and check
    assert set(status.group(1).split()) <= fields("StatusContext")
    assert set(check.group(1).split()) <= fields("CheckRun")


def test_the_rollups_enum_values_are_githubs() -> None:
    from .fake_rollup import check_run, status_context

    states = {"success", "pending", "failure", "error"}
    assert {status_context({"context": "c", "state": s})["state"] for s in states} <= fields(
        "StatusState"
    )
    runs = [("queued", None), ("in_progress", None), ("completed", "success")]
    runs += [("completed", c) for c in ("neutral", "skipped", "failure", "cancelled")]
    runs += [("completed", c) for c in ("timed_out", "action_required", "stale")]
    nodes = [check_run({"name": "n", "status": s, "conclusion": c}) for s, c in runs]
    assert {n["status"] for n in nodes} <= fields("CheckStatusState")
    assert {n["conclusion"] for n in nodes if n["conclusion"]} <= fields("CheckConclusionState")
