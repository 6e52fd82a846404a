"""GitHub's merge queue through GraphQL: enqueue a pull request with its head as the guard
(``enqueuePullRequest`` with ``expectedHeadOid``), take it out again (``dequeuePullRequest``,
whose input is the PR's ``id``), and read its place in the queue, its merge group's checks,
or why it was last removed (``RemovedFromMergeQueueEvent``), with the PR's state (merged).
Whether a branch requires the queue is read from the rules that apply to it (REST
``GET /rules/branches/{branch}``: a ``merge_queue`` rule).

Calls: enqueue 2 (the PR's node id, then the mutation), dequeue 2 (the same), plus a read
when GitHub refuses it; a read 1, the rules 1 (conditional: free of the rate limit while
unchanged). A GraphQL error is GitHub's refusal: ``NOT_FOUND`` is ``ScmNotFound``,
anything else ``ScmConflict`` (a head that moved, a PR not ready for the queue). GitHub
refuses the dequeue of a PR that is not in the queue (it left, or was merged) with an
``UNPROCESSABLE`` error, so a refused dequeue is answered by reading where the PR stands:
out of the queue is what was asked, merged is the queue's race, still in it is the refusal.
GraphQL goes where the instance serves it (``GitHubClient.graphql_url``: GitHub Enterprise
Server's is ``<host>/api/graphql``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmError, ScmNotFound
from promoter.models import QueueEntry
from scm_plugins.github.api import RepoApi
from scm_plugins.github.limits import GRAPHQL_PATH

NODE_ID = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) { id } }
}"""

ENQUEUE = """mutation($id: ID!, $head: GitObjectID!) {
  enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) {
    mergeQueueEntry { state position }
  }
}"""

DEQUEUE = """mutation($id: ID!) {
  dequeuePullRequest(input: {id: $id}) { mergeQueueEntry { state } }
}"""

ENTRY = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      state
      isInMergeQueue
      mergeQueueEntry {
        state position
        headCommit { statusCheckRollup { state } }
      }
      timelineItems(last: 1, itemTypes: [REMOVED_FROM_MERGE_QUEUE_EVENT]) {
        nodes { ... on RemovedFromMergeQueueEvent { reason createdAt } }
      }
    }
  }
}"""


RULES_PER_PAGE = 100
"""Rules of one branch read at once (GitHub's most); a branch has a handful."""


def rule_types(data: Any) -> list[str] | None:
    """The ``type`` of each rule in a "Get rules for a branch" answer; None for another shape."""
    if not isinstance(data, list):
        return None
    return [str(rule.get("type")) for rule in data if isinstance(rule, dict)]


class GitHubQueue:
    def __init__(self, api: RepoApi) -> None:
        self._api = api

    def required(self, *, repo: Repository, branch: str) -> bool:
        """Whether a ``merge_queue`` rule of an active ruleset applies to ``branch``."""
        types = self._api.call(
            repo,
            "get_branch_rules",
            "GET",
            f"/rules/branches/{quote(branch, safe='/')}",
            params={"per_page": RULES_PER_PAGE},
            conditional=True,
            keep=rule_types,
            branch=branch,
        )
        if types is None:
            raise ScmError(f"GitHub's rules for {branch} are not a list of rules")
        return "merge_queue" in types

    def _graphql(self, repo: Repository, operation: str, query: str, **variables: Any) -> Any:
        token = self._api.credentials.token(repo=repo)
        data = self._api.client.request(
            operation,
            "POST",
            GRAPHQL_PATH,
            url=self._api.client.graphql_url,
            authorization=f"bearer {token}",
            body={"query": query, "variables": variables},
            repo=repo.full_path,
        )
        errors = (data or {}).get("errors") or []
        if errors:
            first = errors[0]
            message = f"GitHub refused {operation}: {first.get('message', '')}"
            raise ScmNotFound(message) if first.get("type") == "NOT_FOUND" else ScmConflict(message)
        return (data or {}).get("data") or {}

    def _pull(self, repo: Repository, operation: str, query: str, number: int) -> Any:
        owner, _, name = repo.full_path.partition("/")
        data = self._graphql(repo, operation, query, owner=owner, name=name, number=number)
        pull = ((data.get("repository") or {}).get("pullRequest")) or None
        if pull is None:
            raise ScmNotFound(f"pull request #{number} of {repo.full_path} not found")
        return pull

    def enqueue(self, *, repo: Repository, number: int, expected_head_sha: str) -> QueueEntry:
        node = self._pull(repo, "pull_request_node", NODE_ID, number)["id"]
        data = self._graphql(repo, "enqueue_pull_request", ENQUEUE, id=node, head=expected_head_sha)
        entry = (data.get("enqueuePullRequest") or {}).get("mergeQueueEntry") or {}
        return QueueEntry(
            queued=True, state=str(entry.get("state") or ""), position=entry.get("position")
        )

    def dequeue(self, *, repo: Repository, number: int) -> QueueEntry:
        node = self._pull(repo, "pull_request_node", NODE_ID, number)["id"]
        try:
            self._graphql(repo, "dequeue_pull_request", DEQUEUE, id=node)
        except ScmConflict:
            left = self.entry(repo=repo, number=number)
            if left.queued:
                raise
            return left  # out of the queue already, or merged by it first
        return QueueEntry(queued=False, removed_reason="taken out by the promoter")

    def entry(self, *, repo: Repository, number: int) -> QueueEntry:
        pull = self._pull(repo, "get_merge_queue_entry", ENTRY, number)
        entry = pull.get("mergeQueueEntry")
        if entry:
            rollup = ((entry.get("headCommit") or {}).get("statusCheckRollup")) or {}
            return QueueEntry(
                queued=True,
                state=str(entry.get("state") or ""),
                position=entry.get("position"),
                checks=str(rollup.get("state") or ""),
            )
        removed = ((pull.get("timelineItems") or {}).get("nodes")) or []
        last = removed[-1] if removed else {}
        at = last.get("createdAt")
        return QueueEntry(
            queued=False,
            removed_reason=str(last.get("reason") or ""),
            removed_at=datetime.fromisoformat(at.replace("Z", "+00:00")) if at else None,
            merged=pull.get("state") == "MERGED",
        )
