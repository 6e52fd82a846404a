"""Each SCM call is counted under the outcome it had (success, the kind of SCM error, or
an error no translation knows, or held back by the credential's budget), and the
remaining-budget gauge reads only the header that states it."""

from __future__ import annotations

import pytest

from promoter.errors import (
    RateBudgetWait,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.metrics import sample
from scm_plugins.budget import Cost, Priority
from scm_plugins.calls import ScmCalls
from tests.unit.test_credential_budget import SMALL, budget
from tests.unit.test_scm_calls_receipt import gauge


def outcomes(provider: str) -> dict[str, float]:
    counted = {
        outcome: sample(
            "promoter_scm_calls_total",
            {"provider": provider, "operation": "op", "outcome": outcome},
        )
        for outcome in (
            "success",
            "rate_limited",
            "conflict",
            "not_found",
            "unavailable",
            "error",
        )
    }
    return {outcome: n for outcome, n in counted.items() if n}


def test_each_call_is_counted_under_its_outcome() -> None:
    calls = ScmCalls("outcome-test", lambda exc: None)
    with calls.call("op"):
        pass
    raised: list[ScmError] = [
        ScmConflict("head moved"),
        ScmNotFound("gone"),
        ScmUnavailable("502"),
        ScmRateLimited("429", retry_after=0.0),
    ]
    for error in raised:
        with pytest.raises(type(error)), calls.call("op"):
            raise error
    with pytest.raises(KeyError), calls.call("op"):
        raise KeyError("no translation knows it")
    assert outcomes("outcome-test") == {
        "success": 1,
        "conflict": 1,
        "not_found": 1,
        "unavailable": 1,
        "rate_limited": 1,
        "error": 1,
    }


def test_a_translated_error_is_counted_under_the_scm_errors_outcome() -> None:
    calls = ScmCalls("outcome-translated", lambda exc: ScmUnavailable(f"translated: {exc}"))
    with pytest.raises(ScmUnavailable), calls.call("op"):
        raise ConnectionResetError("reset by peer")
    assert outcomes("outcome-translated") == {"unavailable": 1}


def test_the_gauge_reads_the_remaining_header_among_others_before_it() -> None:
    calls = ScmCalls("outcome-gauge", lambda exc: None)
    with calls.call("op") as receipt:
        receipt.answered(200, {"Content-Length": "17", "X-RateLimit-Remaining": "4321"})
    assert gauge("outcome-gauge") == 4321.0


def test_a_call_the_budget_holds_back_is_counted_throttled_under_its_provider_and_operation() -> (
    None
):
    b, _ = budget()
    calls = ScmCalls("throttle-test", lambda exc: None, budget=b)
    held = [b.admit(Cost(Priority.MERGE)) for _ in range(SMALL.concurrent)]
    labels = {"provider": "throttle-test", "operation": "merge_pull_request"}
    with (
        pytest.raises(RateBudgetWait) as waited,
        calls.call("merge_pull_request", Cost(Priority.MERGE)),
    ):
        pass
    assert "room in the credential's concurrency limit" in str(waited.value)
    assert sample("promoter_scm_calls_total", {**labels, "outcome": "throttled"}) == 1
    for ticket in held:
        ticket.answered(200, {})
