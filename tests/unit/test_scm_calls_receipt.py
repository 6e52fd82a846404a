"""What a call's receipt passes on: the SCM's rate-limit headers to the gauge and, for a
call that stated its cost, the status and headers to the credential's budget."""

from __future__ import annotations

import time

from promoter.metrics import REGISTRY
from scm_plugins.budget import Cost, CredentialBudget, Priority
from scm_plugins.calls import ScmCalls
from scm_plugins.github.limits import GITHUB_LIMITS


def gauge(provider: str) -> float | None:
    return REGISTRY.get_sample_value("promoter_scm_rate_limit_remaining", {"provider": provider})


def test_the_remaining_budget_gauge_reads_githubs_and_gitlabs_headers_in_any_case() -> None:
    calls = ScmCalls("receipt-gh", lambda exc: None)
    with calls.call("read") as receipt:
        receipt.answered(200, {"X-RateLimit-Remaining": "4321"})
    assert gauge("receipt-gh") == 4321.0
    with calls.call("read") as receipt:
        receipt.answered(200, {"Content-Type": "application/json"})
    assert gauge("receipt-gh") == 4321.0  # no header: left as it was
    gitlab = ScmCalls("receipt-gl", lambda exc: None)
    with gitlab.call("read") as receipt:
        receipt.answered(200, {"RateLimit-Remaining": "99", "Other": "1"})
    assert gauge("receipt-gl") == 99.0
    with gitlab.call("read") as receipt:
        receipt.answered(200, {"ratelimit-remaining": "garbled"})
    assert gauge("receipt-gl") == 99.0


def test_a_costed_calls_answer_reaches_the_credentials_budget() -> None:
    budget = CredentialBudget(GITHUB_LIMITS, clock=time.monotonic, wall=time.time)
    calls = ScmCalls("receipt-budget", lambda exc: None, budget=budget)
    reset = time.time() + 600
    with calls.call("read", Cost(Priority.MERGE)) as receipt:
        receipt.answered(
            200,
            {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "1234",
                "X-RateLimit-Reset": str(int(reset)),
            },
        )
    assert budget.primary.remaining == 1234
    assert budget.primary.limit == 5000
