"""Rule 6's last clause: a promotion PR is always mergeable. Pure, like the rest of the engine.

After a revert, a person's hotfix or a squash merge, the active branch holds commits the
proposed branch never saw, and a three-way merge of the two conflicts (the hydrator's
``hydrator.metadata`` alone differs on both sides). The cure, as the upstream project
does it: an "ours" merge of the active branch onto ``<env>-next``, whose tree is the
proposed tree, so the next three-way merge is trivial and its result is exactly what the
hydrator rendered. The proposed tree never changes; a clean merge is never touched.
"""

from __future__ import annotations

from promoter.engine.core.actions import MergeActiveIntoProposed
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import Snapshot

REQUEUE_MERGEABLE = 0.0
"""Once the proposed branch moved, read it again at once (its PR head moved too)."""


def keep_mergeable(snapshot: Snapshot, index: int) -> MergeActiveIntoProposed | None:
    """The "ours" merge that makes environment ``index``'s promotion mergeable, if needed."""
    env = snapshot.environments[index]
    active, proposed = env.active, env.proposed
    if not env.merge_conflicts or active is None or proposed is None or env.error:
        return None
    return MergeActiveIntoProposed(
        environment=index,
        proposed_branch=env.proposed_branch,
        proposed_sha=proposed.hydrated_sha,
        active_branch=env.branch,
        active_sha=active.hydrated_sha,
        tree_sha=proposed.tree_sha,
    )


def reason(action: MergeActiveIntoProposed) -> str:
    """The environment's reason while its proposed branch is being made mergeable."""
    return (
        f"{action.proposed_branch} conflicts with {action.active_branch}: merging"
        f" {short(action.active_sha)} into it, keeping its tree"
    )


def message(action: MergeActiveIntoProposed) -> str:
    """The commit message of the "ours" merge."""
    return (
        f"Merge {action.active_branch} into {action.proposed_branch}, keeping"
        f" {action.proposed_branch}'s tree\n\n"
        f"{action.active_branch} ({short(action.active_sha)}) holds commits"
        f" {action.proposed_branch} never saw (a revert, a hotfix, a squash merge), and a"
        " three-way merge conflicted. This merge keeps the proposed manifests exactly as"
        " rendered, so that the promotion can be merged.\n"
    )
