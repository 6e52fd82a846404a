"""One credential spent by several replicas: each keeps to its share of every limit, so
that together they keep within the credential's, and a new split takes effect at once."""

from __future__ import annotations

from dataclasses import replace

from scm_plugins.budget import Cost, CredentialBudget, Priority, Throttled
from scm_plugins.github.limits import GITHUB_LIMITS

MINUTE = replace(
    GITHUB_LIMITS,
    window=60.0,
    primary=600,
    concurrent=10,
    points_per_minute=100,
    content_per_minute=20,
    content_per_window=40,
    max_wait=0.0,
)
"""An hour of one minute (so a minute of one second); calls never wait in their thread
(admitted or ``Throttled``)."""

READ = Cost(priority=Priority.READ, points=1)
PULL = Cost(priority=Priority.WRITE, points=5, content=True)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def spend(budgets: list[CredentialBudget], clock: Clock, cost: Cost, seconds: float) -> list[int]:
    """Every budget asks for ``cost`` as fast as it may for ``seconds``; admitted per budget."""
    admitted = [0] * len(budgets)
    end = clock.now + seconds
    while clock.now < end:
        for n, budget in enumerate(budgets):
            try:
                budget.admit(cost).answered(200, {})
                admitted[n] += 1
            except Throttled:
                pass
        clock.now += 0.01
    return admitted


def test_replicas_sharing_a_credential_keep_within_its_limits_together() -> None:
    clock = Clock()
    budgets = [CredentialBudget(MINUTE, clock=clock) for _ in range(4)]
    for budget, share in zip(budgets, (0.4, 0.3, 0.2, 0.1), strict=True):
        budget.share(share)
    pulls = spend(budgets, clock, PULL, 60.0)
    assert sum(pulls) <= MINUTE.content_per_window
    assert pulls[0] > pulls[3]
    clock.now += 2.0
    reads = spend(budgets, clock, READ, MINUTE.minute)
    assert sum(reads) <= MINUTE.points_per_minute
    assert reads[0] > 2 * reads[3]
    alone = CredentialBudget(MINUTE, clock=clock)
    assert sum(spend([alone], clock, READ, MINUTE.minute)) > 2 * reads[0]


def test_a_new_split_applies_to_the_next_call() -> None:
    clock = Clock()
    budget = CredentialBudget(MINUTE, clock=clock)
    budget.share(0.05)  # a replica that holds little: two pull requests an hour
    assert spend([budget], clock, PULL, 59.0) == [2]
    budget.share(1.0)  # the others left: the whole credential is its own
    clock.now += 61.0
    assert spend([budget], clock, PULL, 59.0)[0] >= 0.9 * MINUTE.content_per_window
