"""Reviewer requests: the environment's reviewers are asked for on its promotion PR once, the
first time the PR is seen open; the ledger remembers the PR so that no update of it, no
restart and no second instance asks again."""

from __future__ import annotations

from promoter.engine.core.actions import Action, RequestReviewers
from promoter.engine.core.snapshot import Snapshot
from promoter.models import PullRequest


def request_reviewers(snapshot: Snapshot, index: int, pr: PullRequest | None) -> list[Action]:
    """A request for the open PR ``pr`` when it has reviewers to ask for and none was made."""
    env = snapshot.environments[index]
    if pr is None or not (env.reviewers or env.reviewer_teams):
        return []
    if pr.number in env.ledger.reviewers_requested:
        return []
    return [
        RequestReviewers(
            environment=index, number=pr.number, users=env.reviewers, teams=env.reviewer_teams
        )
    ]
