"""Each SCM call is counted under the outcome it had (success, the kind of SCM error, or
an error no translation knows), and the remaining-budget gauge reads only the header that
states it."""

from __future__ import annotations

import pytest

from promoter.errors import ScmConflict, ScmError, ScmNotFound, ScmRateLimited, ScmUnavailable
from promoter.metrics import sample
from scm_plugins.calls import ScmCalls
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
