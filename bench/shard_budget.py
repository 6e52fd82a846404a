"""The SCM budget split of ``bench/shards.py``: one credential shared by the replicas.

``budget_split``: each replica's ``CredentialBudget`` gets the share of the credential's
limits that the strategies it holds weigh; every replica then spends as fast as its
budget lets it for a (scaled) hour, against a server that counts the credential's calls
and reports what is left in GitHub's headers, refusing what goes over.
``budget_moves``: the content limit across a move of shards and a scale event, split by
share and kept in the group's shared log (``promoter.kube.shards.spending``).
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


def budget_moves(api: str, namespace: str, hour: float) -> dict[str, Any]:
    """One GitHub token's content limit across a move of shards and a scale event, split
    by share (as before) and kept in the group's shared log (a Lease on the API
    stand-in at ``api``): two replicas spend 150 and 120 content calls of the hour's 500,
    then one's share shrinks (a kill and a restart moved its shards), a third replica
    joins, and all three create content in turn until the credential is full. A *wait
    for a share* is a call refused while the credential as a whole had room for it."""
    return {
        "split_by_share": _moves(api, namespace, hour, shared=False),
        "shared_log": _moves(api, namespace, hour, shared=True),
    }


def _moves(api: str, namespace: str, hour: float, *, shared: bool) -> dict[str, Any]:
    from promoter.kube import Kube, LeaseFleet, loopback_client

    limits = replace(GITHUB_LIMITS, window=hour, max_wait=0.0)
    now = [1_700_000_000.0 + (hour * 10 if shared else 0.0)]  # a log of its own each
    kube = Kube(loopback_client(api))
    logs: list[LeaseFleet] = []
    pull = Cost(priority=Priority.WRITE, points=5, content=True)
    room = limits.content_per_window - round(limits.content_per_window * 0.05)
    group = f"bench-moves-{int(now[0])}"

    def replica(share: float) -> CredentialBudget:
        budget = CredentialBudget(limits, clock=lambda: now[0], wall=lambda: now[0])
        if shared:
            logs.append(
                LeaseFleet(
                    kube,
                    namespace=namespace,
                    group=group,
                    provider="github",
                    watched=lambda name: None,
                    timeout=5.0,
                )
            )
            budget.spend_with(logs[-1])
        budget.share(share)
        return budget

    made: list[float] = []
    waits = 0

    def create(budget: CredentialBudget) -> None:
        nonlocal waits
        try:
            budget.admit(pull).answered(201, {})
            made.append(now[0])
        except Throttled:
            minute = sum(1 for t in made if t > now[0] - limits.minute * 1.05)
            if len(made) < room and minute < limits.content_per_minute - 4:
                waits += 1
        now[0] += limits.minute / 20  # 20 a minute: under GitHub's 80

    try:
        a, b = replica(0.5), replica(0.5)
        for budget, calls in ((a, 150), (b, 120)):
            for _ in range(calls):
                create(budget)
        a.share(0.2)
        b.share(0.5)
        c = replica(0.3)
        for n in range(room - len(made) + 30):
            create((a, b, c)[n % 3])
    finally:
        kube.client.close()
    return {
        "content_calls": len(made),
        "room_in_the_hour": room,
        "waits_for_a_share": waits,
        "api_writes": sum(log.writes for log in logs),
        "api_conflicts": sum(log.conflicts for log in logs),
    }
