"""The SCM budget split of ``bench/shards.py``: one credential shared by the replicas.

Each replica's ``CredentialBudget`` gets the share of the credential's limits that the
strategies it holds weigh; every replica then spends as fast as its budget lets it for
a (scaled) hour, against a server that counts the credential's calls and reports what
is left in GitHub's headers, refusing what goes over.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scm_plugins.budget import Cost, CredentialBudget, Priority, Throttled
from scm_plugins.github.limits import GITHUB_LIMITS


def budget_split(held: dict[str, float], hour: float) -> dict[str, Any]:
    """One GitHub token shared by the replicas by the strategies they hold, every replica
    spending as fast as its budget lets it for a scaled hour, against a server that
    counts the token's calls and reports what is left (as GitHub's headers do)."""
    limits = replace(GITHUB_LIMITS, window=hour, max_wait=0.0)  # an hour in ``hour`` seconds
    epoch, now = 1_700_000_000.0, [0.0]

    def clock() -> float:
        """Simulated time; a microsecond passes at every look, as real time would: a wait
        too short to move a large float would otherwise never end."""
        now[0] += 1e-6
        return now[0]

    budgets = {
        name: CredentialBudget(limits, clock=clock, wall=lambda: epoch + now[0]) for name in held
    }
    total = sum(held.values())
    for name, budget in budgets.items():
        budget.share(held[name] / total)
    read = Cost(priority=Priority.READ)
    admitted = dict.fromkeys(budgets, 0)
    used = refused = 0
    while now[0] < limits.window:
        for name, budget in budgets.items():
            try:
                ticket = budget.admit(read)
            except Throttled:
                continue
            used += 1
            refused += used > limits.primary
            admitted[name] += 1
            headers = {
                "x-ratelimit-limit": str(limits.primary),
                "x-ratelimit-remaining": str(max(0, limits.primary - used)),
                "x-ratelimit-reset": str(int(epoch + limits.window)),
            }
            ticket.answered(200 if used <= limits.primary else 403, headers)
        now[0] += hour / 6_000  # 100 tries a scaled minute: more than any share allows
    return {
        "limit_per_hour": limits.primary,
        "spent_per_hour": used,
        "refused_by_the_scm": refused,
        "share_of_limit": round(used / limits.primary, 3),
        "per_replica": admitted,
    }
