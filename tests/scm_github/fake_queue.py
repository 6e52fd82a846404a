"""The fake GitHub's merge queue: ``POST /graphql`` for the queries and mutation the plugin
sends, and what GitHub does with a queued PR (a merge group's checks pass and it merges, or
they fail and it is dequeued with a reason).

Answers follow GitHub's GraphQL schema (``tests/fixtures/github/graphql``: the types, the
fields and the enum values are checked against it): ``enqueuePullRequest`` refuses a head
that moved (``expectedHeadOid``) and a closed PR with an error, as GitHub answers a
mutation it refuses (status 200, ``errors``). A branch that requires the queue refuses
the REST merge with 405 (the message as people quoted it, ``rest/quoted``), and the rules
that apply to a branch (``GET /rules/branches/{branch}``) are GitHub's documented example
(``rest/docs``), plus a ``merge_queue`` rule (the example's first rule with the type and
the parameters of the ``repository-rule-merge-queue`` schema) when the queue is required by
a ruleset; a classic branch protection's queue is not among them.

An instance without the merge queue (``merge_queue_available = False``: a GitHub Enterprise
Server release before it) refuses every query that names its fields as GitHub's GraphQL
refuses a field its schema lacks: status 200, an ``undefinedField`` error per field (the
shape ``gh api graphql`` prints for one), and no ``data``; its branches list no
``merge_queue`` rule.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from . import fake_git
from .fake_state import NOT_FOUND, Answer, FakeRepo, Handler, now
from .genuine import Genuine

QUEUE_RULE_PARAMETERS = {
    "check_response_timeout_minutes": 60,
    "grouping_strategy": "ALLGREEN",
    "max_entries_to_build": 5,
    "max_entries_to_merge": 5,
    "merge_method": "MERGE",
    "min_entries_to_merge": 1,
    "min_entries_to_merge_wait_minutes": 5,
}
"""The parameters the ``repository-rule-merge-queue`` schema requires, with its enums' values."""


class QueueRoutes(ABC):
    genuine: Genuine
    repositories: dict[str, FakeRepo]
    on_push: Callable[[str, str, str | None, str], None] | None
    queued: dict[tuple[str, int], dict[str, Any]]
    removed: dict[tuple[str, int], list[dict[str, Any]]]
    queue_branches: set[tuple[str, str]]
    ruleset_queues: set[tuple[str, str]]
    merge_queue_available: bool

    def queue_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        self.queued, self.removed, self.queue_branches, self.ruleset_queues = {}, {}, set(), set()
        self.merge_queue_available = True
        rules = re.compile(r"^/repos/([^/]+)/([^/]+)/rules/branches/(.+)$")
        return [
            ("POST", re.compile(r"^/graphql$"), self._graphql, "repo"),
            ("GET", rules, self._branch_rules, "repo"),
        ]

    @abstractmethod
    def _pull(self, owner: str, name: str, number: str) -> tuple[FakeRepo, dict[str, Any]]:
        """The repository and a stored pull request, or a 404."""

    # --- what GitHub does --------------------------------------------------------------

    def require_merge_queue(self, full_name: str, branch: str, *, ruleset: bool = True) -> None:
        """Merges into ``branch`` go through the queue, required by a ruleset (its rule
        listed for the branch) or by a classic branch protection (not listed)."""
        self.queue_branches.add((full_name.lower(), branch))
        if ruleset:
            self.ruleset_queues.add((full_name.lower(), branch))

    def queue_refusal(self) -> dict[str, Any]:
        """GitHub's 405 body for a merge on a branch that requires the queue."""
        body: dict[str, Any] = self.genuine.quoted("merge-queue-required")
        return body

    def _branch_rules(self, owner: str, name: str, branch: str, *, query: Any, body: Any) -> Answer:
        full = f"{owner}/{name}".lower()
        if full not in self.repositories:
            return 404, {}, NOT_FOUND
        rules: list[dict[str, Any]] = self.genuine.docs("repos.get-branch-rules.200")
        if (full, unquote(branch)) in self.ruleset_queues and self.merge_queue_available:
            rule = {**rules[0], "type": "merge_queue", "parameters": dict(QUEUE_RULE_PARAMETERS)}
            rules.append(rule)
        return 200, {}, rules

    def dequeue(self, full_name: str, number: int, reason: str) -> None:
        """The queue takes PR ``number`` out (its merge group's checks failed, say)."""
        key = (full_name.lower(), number)
        self.queued.pop(key)
        self.removed.setdefault(key, []).append({"reason": reason, "createdAt": now()})

    def merge_from_queue(self, full_name: str, number: int) -> str:
        """The merge group's checks pass: the queue merges the PR into its base."""
        owner, name = full_name.split("/")
        repo, pr = self._pull(owner, name, str(number))
        self.queued.pop((full_name.lower(), number))
        head = fake_git.branch_sha(repo.git_dir, pr["head"]) or ""
        before = fake_git.branch_sha(repo.git_dir, pr["base"])
        message = f"Merge pull request #{number} from {pr['head']}"
        merged = fake_git.merge(
            repo.git_dir, base=pr["base"], head_sha=head, method="merge", message=message
        )
        stamp = now()
        pr.update(state="closed", closed_at=stamp, merged_at=stamp, merge_commit_sha=merged)
        pr["frozen_head"] = head
        if self.on_push is not None:
            self.on_push(full_name, pr["base"], before, merged)
        return merged

    def in_queue(self, full_name: str, number: int) -> bool:
        return (full_name.lower(), number) in self.queued

    # --- GraphQL -----------------------------------------------------------------------

    def _graphql(self, *, query: Any, body: Any) -> Answer:
        text, variables = str(body.get("query", "")), body.get("variables") or {}
        lacking = [f for f in QUEUE_FIELDS if f in text] if not self.merge_queue_available else []
        if lacking:
            return 200, {}, {"errors": [_undefined(field) for field in lacking]}
        if "enqueuePullRequest" in text:
            return 200, {}, self._enqueue(variables)
        owner, name, number = variables["owner"], variables["name"], variables["number"]
        full = f"{owner}/{name}".lower()
        if full not in self.repositories or number not in self.repositories[full].pulls:
            return 200, {}, _refused("NOT_FOUND", f"Could not resolve to a PullRequest ({number})")
        if "mergeQueueEntry" not in text:
            return 200, {}, {"data": {"repository": {"pullRequest": {"id": _node(full, number)}}}}
        entry = self.queued.get((full, number))
        nodes = self.removed.get((full, number), [])[-1:]
        pull = {
            "isInMergeQueue": entry is not None,
            "mergeQueueEntry": entry
            and {
                "state": entry["state"],
                "position": entry["position"],
                "headCommit": {"statusCheckRollup": {"state": entry["checks"]}},
            },
            "timelineItems": {"nodes": nodes},
        }
        return 200, {}, {"data": {"repository": {"pullRequest": pull}}}

    def _enqueue(self, variables: dict[str, Any]) -> Any:
        full, _, number_text = str(variables.get("id", "")).removeprefix("PR_").rpartition("#")
        if full not in self.repositories or not number_text.isdigit():
            return _refused("NOT_FOUND", "Could not resolve to a node")
        number = int(number_text)
        repo, pr = self.repositories[full], self.repositories[full].pulls[int(number)]
        head = fake_git.branch_sha(repo.git_dir, pr["head"])
        if pr["state"] != "open":
            return _refused("UNPROCESSABLE", "Pull request is closed")
        if variables.get("head") and variables["head"] != head:
            return _refused("UNPROCESSABLE", "Expected head OID does not match the pull request")
        position = 1 + sum(1 for (f, _) in self.queued if f == full)
        entry = {"state": "AWAITING_CHECKS", "position": position, "checks": "PENDING"}
        self.queued[(full, number)] = entry
        return {
            "data": {
                "enqueuePullRequest": {"mergeQueueEntry": {"state": "QUEUED", "position": position}}
            }
        }


QUEUE_FIELDS = {
    "enqueuePullRequest": "Mutation",
    "isInMergeQueue": "PullRequest",
    "mergeQueueEntry": "PullRequest",
}
"""The merge queue's fields in the queries the plugin sends, and the type each is on."""


def _undefined(field: str) -> dict[str, Any]:
    """GitHub's GraphQL error for a field its schema does not have."""
    kind = QUEUE_FIELDS[field]
    return {
        "path": ["mutation" if kind == "Mutation" else "query", field],
        "extensions": {"code": "undefinedField", "typeName": kind, "fieldName": field},
        "locations": [{"line": 2, "column": 3}],
        "message": f"Field '{field}' doesn't exist on type '{kind}'",
    }


def _node(full: str, number: int) -> str:
    return f"PR_{full}#{number}"


def _refused(kind: str, message: str) -> dict[str, Any]:
    return {
        "data": None,
        "errors": [{"type": kind, "path": ["enqueuePullRequest"], "message": message}],
    }
