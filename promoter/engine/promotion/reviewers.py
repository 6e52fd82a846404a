"""Reviewer requests: the environment's reviewers are asked for on its promotion PR once, the
first time the PR is seen open; the ledger remembers the PR so that no update of it, no
restart and no second instance asks again. Whose approval would not count (the PR's
opener, the change's authors: four eyes) is left out of the request up front, and told on
the PR with why."""

from __future__ import annotations

from promoter.engine.core.actions import Action, RequestReviewers
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.four_eyes import not_asked
from promoter.models import PullRequest


def request_reviewers(snapshot: Snapshot, index: int, pr: PullRequest | None) -> list[Action]:
    """A request for the open PR ``pr`` when it has reviewers to ask for and none was made."""
    env = snapshot.environments[index]
    approvals = env.approvals
    users = approvals.reviewers
    if pr is None or not (users or approvals.reviewer_teams):
        return []
    if pr.number in env.ledger.reviewers_requested:
        return []
    why = {user: not_asked(user, pr, approvals.change_authors.value) for user in users}
    return [
        RequestReviewers(
            environment=index,
            number=pr.number,
            users=tuple(user for user in users if why[user] is None),
            teams=approvals.reviewer_teams,
            left_out=tuple(f"{user} ({why[user]})" for user in users if why[user]),
        )
    ]
