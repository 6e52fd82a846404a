"""The one way a merge is built: ``merge_action`` gives every ``MergePullRequest``, its
guard and its commit message, whoever asks for it (a reconcile or a person).

What is merged decides the words: a revert PR's merge is titled as a revert, a promotion
PR's as a promotion, so a commit never says it promotes what it reverts.
"""

from __future__ import annotations

from promoter.engine.core.actions import MergePullRequest
from promoter.engine.core.ledger_state import Revert
from promoter.engine.core.pr_text import short, unique
from promoter.engine.core.snapshot import Snapshot


def merge_action(
    snapshot: Snapshot,
    index: int,
    number: int,
    *,
    revert: Revert | None = None,
    override: bool = False,
    by: str | None = None,
) -> MergePullRequest:
    """The merge of PR ``number`` into environment ``index``.

    With ``revert`` (the ledger's record of the revert whose PR it is), the revert PR on
    the head the revert wrote. Without, the promotion PR on the proposed head, its proposed
    gates read again from the SCM first (rule 6), unless it is an ``override`` (a
    break-glass promotion, past the gates). ``by`` names the person who asked for it.
    """
    env = snapshot.environments[index]
    if revert is not None:
        if override:
            raise ValueError("a revert is never merged as a break-glass promotion")
        title = f"Revert {env.branch} to {short(revert.restored_dry_sha)} (#{number})"
        said = f"Merged by promoter for {snapshot.strategy}: reverts {short(revert.bad_dry_sha)}."
        return MergePullRequest(
            environment=index,
            number=number,
            expected_head_sha=revert.revert_sha,
            dry_sha=revert.restored_dry_sha,
            message=_message(title, said, by),
            purpose="revert",
        )
    proposed = env.proposed
    assert proposed is not None and proposed.dry_sha is not None, "nothing proposed to merge"
    title = f"Promote {short(proposed.dry_sha)} to {env.branch} (#{number})"
    return MergePullRequest(
        environment=index,
        number=number,
        expected_head_sha=proposed.hydrated_sha,
        dry_sha=proposed.dry_sha,
        message=_message(title, f"Merged by promoter for {snapshot.strategy}.", by),
        required_keys=() if override else unique(env.proposed_keys),
        purpose="override" if override else "promotion",
    )


def _message(title: str, said: str, by: str | None) -> str:
    asked = f"\nAsked for by {by}.\n" if by else ""
    return f"{title}\n\n{said}{asked}"
