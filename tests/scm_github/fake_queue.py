"""The fake GitHub's merge queue: ``POST /graphql`` for the queries and mutations the plugin
sends, and what GitHub does with a queued PR: it builds a merge group (a commit merging the
PR's head into its base), and once the queue's required checks (``require_merge_queue``'s
``checks``) pass on that commit it merges it by itself, or they fail and it dequeues the PR
with a reason; a PR whose head moved, or that was closed or merged, leaves the queue.

Answers follow GitHub's GraphQL schema (``tests/fixtures/github/graphql``: the types, the
fields and the enum values are checked against it): ``enqueuePullRequest`` refuses a head
that moved (``expectedHeadOid``) and a closed PR with an error, as GitHub answers a mutation
it refuses (status 200, ``errors``); ``dequeuePullRequest`` refuses a PR that is not in the
queue with an ``UNPROCESSABLE`` error and no payload, as GitHub was seen to answer ("Failed
to remove PR #143 ...", also when the PR had just left the queue by itself:
https://github.com/vanillagreencom/kendex/issues/1289), so that the plugin must read where
the PR stands. A branch that requires the queue refuses the REST merge with 405 (the message
as people quoted it, ``rest/quoted``), and the rules that apply to a branch (``GET
/rules/branches/{branch}``) are GitHub's documented example (``rest/docs``), plus a
``merge_queue`` rule (the example's first rule with the type and the parameters of the
``repository-rule-merge-queue`` schema) when the queue is required by a ruleset; a classic
branch protection's queue is not among them.

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
    queue_checks: dict[tuple[str, str], tuple[str, ...]]
    merge_queue_available: bool

    def queue_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        self.queued, self.removed, self.queue_branches, self.ruleset_queues = {}, {}, set(), set()
        self.queue_checks = {}
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

    def require_merge_queue(
        self, full_name: str, branch: str, *, ruleset: bool = True, checks: tuple[str, ...] = ()
    ) -> None:
        """Merges into ``branch`` go through the queue, required by a ruleset (its rule
        listed for the branch) or by a classic branch protection (not listed). ``checks``:
        the statuses or check runs the queue waits for on a merge group (none: the test
        merges or dequeues by hand)."""
        self.queue_branches.add((full_name.lower(), branch))
        self.queue_checks[(full_name.lower(), branch)] = checks
        if ruleset:
            self.ruleset_queues.add((full_name.lower(), branch))

    def merge_group(self, full_name: str, number: int) -> str:
        """The commit of PR ``number``'s merge group, which CI tests."""
        group: str = self.queued[(full_name.lower(), number)]["group"]
        return group

    def group_checks_landed(self, full_name: str, sha: str) -> None:
        """A status or check run landed on ``sha``: the queue merges a group whose checks all
        passed, and dequeues one whose check failed."""
        full = full_name.lower()
        self._drop_gone(full)
        for (owner_name, number), entry in list(self.queued.items()):
            checks = self.queue_checks.get((owner_name, entry["base"]), ())
            if owner_name != full or entry["group"] != sha or not checks:
                continue
            results = self._group_results(full, sha, checks)
            if any(r in ("failure", "error") for r in results):
                self.dequeue(full_name, number, "the merge group's required checks failed")
            elif all(r == "success" for r in results):
                self._merge_group(full_name, number)

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
        head = fake_git.branch_sha(repo.git_dir, pr["head"]) or ""
        before = fake_git.branch_sha(repo.git_dir, pr["base"])
        message = f"Merge pull request #{number} from {pr['head']}"
        merged = fake_git.merge(
            repo.git_dir, base=pr["base"], head_sha=head, method="merge", message=message
        )
        return self._merged(full_name, pr, head, before, merged)

    def _merge_group(self, full_name: str, number: int) -> None:
        """The base moves to the group's commit (it was built on the base's tip), or, when
        the base moved meanwhile, the PR's head is merged into the new tip."""
        owner, name = full_name.split("/")
        repo, pr = self._pull(owner, name, str(number))
        entry = self.queued[(full_name.lower(), number)]
        before = fake_git.branch_sha(repo.git_dir, pr["base"])
        if before != entry["base_sha"]:
            self.merge_from_queue(full_name, number)
            return
        ref = f"refs/heads/{pr['base']}"
        fake_git.git(repo.git_dir, "update-ref", ref, entry["group"], entry["base_sha"])
        self._merged(full_name, pr, entry["head"], before, entry["group"])

    def _merged(
        self, full_name: str, pr: dict[str, Any], head: str, before: str | None, merged: str
    ) -> str:
        stamp = now()
        self.queued.pop((full_name.lower(), pr["number"]), None)  # out of the queue as merged
        pr.update(state="closed", closed_at=stamp, merged_at=stamp, merge_commit_sha=merged)
        pr["frozen_head"] = head
        if self.on_push is not None:
            self.on_push(full_name, pr["base"], before, merged)
        return merged

    def in_queue(self, full_name: str, number: int) -> bool:
        self._drop_gone(full_name.lower())
        return (full_name.lower(), number) in self.queued

    def _drop_gone(self, full: str) -> None:
        """A PR closed, merged or pushed to leaves the queue (GitHub's own doing)."""
        for (owner_name, number), entry in list(self.queued.items()):
            if owner_name != full:
                continue
            repo = self.repositories[full]
            pr = repo.pulls[number]
            if pr["state"] != "open":
                self.dequeue(full, number, "the pull request was closed")
            elif fake_git.branch_sha(repo.git_dir, pr["head"]) != entry["head"]:
                self.dequeue(full, number, "the pull request's head was updated")

    def _group_results(self, full: str, sha: str, checks: tuple[str, ...]) -> list[str]:
        """The latest result of each of ``checks`` on ``sha`` (a status or a check run)."""
        repo = self.repositories[full]
        latest: dict[str, str] = {}
        for status in repo.statuses.get(sha, []):
            latest.setdefault(status["context"], status["state"])
        for run in repo.check_runs.get(sha, []):
            result = run["conclusion"] if run["status"] == "completed" else "pending"
            latest.setdefault(run["name"], result or "pending")
        return [latest.get(check, "pending") for check in checks]

    # --- GraphQL -----------------------------------------------------------------------

    def _graphql(self, *, query: Any, body: Any) -> Answer:
        text, variables = str(body.get("query", "")), body.get("variables") or {}
        lacking = [f for f in QUEUE_FIELDS if f in text] if not self.merge_queue_available else []
        if lacking:
            return 200, {}, {"errors": [_undefined(field) for field in lacking]}
        if "enqueuePullRequest" in text:
            return 200, {}, self._enqueue(variables)
        if "dequeuePullRequest" in text:
            return 200, {}, self._dequeue(variables)
        owner, name, number = variables["owner"], variables["name"], variables["number"]
        full = f"{owner}/{name}".lower()
        if full not in self.repositories or number not in self.repositories[full].pulls:
            return 200, {}, _refused("NOT_FOUND", f"Could not resolve to a PullRequest ({number})")
        if "mergeQueueEntry" not in text:
            return 200, {}, {"data": {"repository": {"pullRequest": {"id": _node(full, number)}}}}
        self._drop_gone(full)
        entry = self.queued.get((full, number))
        nodes = self.removed.get((full, number), [])[-1:]
        stored = self.repositories[full].pulls[number]
        state = (
            "MERGED" if stored["merged_at"] else "OPEN" if stored["state"] == "open" else "CLOSED"
        )
        pull = {
            "state": state,
            "isInMergeQueue": entry is not None,
            "mergeQueueEntry": entry
            and {
                "state": entry["state"],
                "position": entry["position"],
                "headCommit": {"statusCheckRollup": {"state": self._rollup(full, entry)}},
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
        base_sha = fake_git.branch_sha(repo.git_dir, pr["base"]) or ""
        tree = fake_git.git(repo.git_dir, "rev-parse", f"{head}^{{tree}}")
        message = f"Merge pull request #{number} from {pr['head']} (merge group)"
        group = fake_git.git(
            repo.git_dir, "commit-tree", tree, "-p", base_sha, "-p", str(head), "-m", message
        )
        entry = {
            "state": "AWAITING_CHECKS",
            "position": position,
            "checks": "PENDING",
            "base": pr["base"],
            "base_sha": base_sha,
            "head": head,
            "group": group,
        }
        self.queued[(full, number)] = entry
        return {
            "data": {
                "enqueuePullRequest": {"mergeQueueEntry": {"state": "QUEUED", "position": position}}
            }
        }

    def _dequeue(self, variables: dict[str, Any]) -> Any:
        full, _, number_text = str(variables.get("id", "")).removeprefix("PR_").rpartition("#")
        if full not in self.repositories or not number_text.isdigit():
            return _refused("NOT_FOUND", "Could not resolve to a node", "dequeuePullRequest")
        number = int(number_text)
        self._drop_gone(full)
        if (full, number) not in self.queued:
            message = f"Failed to remove PR #{number} from the merge queue"
            return _refused("UNPROCESSABLE", message, "dequeuePullRequest")
        self.dequeue(full, number, "DEQUEUED")
        return {"data": {"dequeuePullRequest": {"mergeQueueEntry": {"state": "UNMERGEABLE"}}}}

    def _rollup(self, full: str, entry: dict[str, Any]) -> str:
        """The group's checks summed up as GitHub's ``StatusState``."""
        checks = self.queue_checks.get((full, entry["base"]), ())
        if not checks:
            return str(entry["checks"])
        results = self._group_results(full, entry["group"], checks)
        if any(r in ("failure", "error") for r in results):
            return "FAILURE"
        return "SUCCESS" if all(r == "success" for r in results) else "PENDING"


QUEUE_FIELDS = {
    "enqueuePullRequest": "Mutation",
    "dequeuePullRequest": "Mutation",
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


def _refused(kind: str, message: str, path: str = "enqueuePullRequest") -> dict[str, Any]:
    return {"data": None, "errors": [{"type": kind, "path": [path], "message": message}]}
