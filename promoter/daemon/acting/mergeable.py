"""Carries out ``MergeActiveIntoProposed``: the "ours" merge that keeps a promotion mergeable.

Through the mirror, with its lock held: the merge commit is written with
``commit-tree`` (two parents, the proposed tree), then pushed onto ``<env>-next`` with
``--force-with-lease`` on the proposed tip the engine saw. A hydrator push that raced it
wins: the push is refused, nothing is lost, and the next reconcile decides again.
"""

from __future__ import annotations

import logging

from promoter.engine import MergeActiveIntoProposed, ours_merge_message
from promoter.git import GitMirror, PushRejected

log = logging.getLogger("promoter.actions")


def merge_active_into_proposed(
    mirror: GitMirror, action: MergeActiveIntoProposed, *, strategy: str
) -> str | None:
    """Push the "ours" merge; its SHA, or None when the proposed branch moved meanwhile."""
    ref = f"refs/heads/{action.proposed_branch}"
    fields = {
        "strategy": strategy,
        "environment": action.active_branch,
        "sha": action.proposed_sha,
        "active": action.active_sha,
    }
    with mirror.lock:
        parents = [action.proposed_sha, action.active_sha]
        commit = mirror.commit_tree(action.tree_sha, parents, ours_merge_message(action))
        try:
            mirror.push([f"{commit}:{ref}"], leases={ref: action.proposed_sha})
        except PushRejected:
            log.info("proposed branch moved, merge of the active branch dropped", extra=fields)
            return None
    log.info("active branch merged into the proposed branch", extra={**fields, "merge": commit})
    return commit
