"""A rate limit pauses every call on the credential, not only the call that met it."""

from __future__ import annotations

import pytest

from promoter.errors import ScmRateLimited
from promoter.metrics import sample
from scm_plugins.calls import ScmCalls


def test_after_a_rate_limit_every_call_on_the_credential_waits() -> None:
    calls = ScmCalls("gitlab-pause-test", lambda exc: None)
    made: list[str] = []
    with pytest.raises(ScmRateLimited), calls.call("set_commit_status", strategy="a"):
        made.append("a")
        raise ScmRateLimited("429", retry_after=8)
    with pytest.raises(ScmRateLimited) as other, calls.call("list_pipelines", strategy="b"):
        made.append("b")  # never reached: the credential is paused
    assert made == ["a"]
    assert 7 < other.value.retry_after <= 8
    paused = sample(
        "promoter_scm_calls_total",
        {"provider": "gitlab-pause-test", "operation": "list_pipelines", "outcome": "paused"},
    )
    assert paused == 1


def test_a_pause_ends_and_another_instance_is_not_paused() -> None:
    first = ScmCalls("pause-a", lambda exc: None)
    second = ScmCalls("pause-b", lambda exc: None)
    with pytest.raises(ScmRateLimited), first.call("x"):
        raise ScmRateLimited("429", retry_after=0.01)
    with second.call("x"):  # another credential goes on
        pass
    import time

    time.sleep(0.02)
    with first.call("x"):
        pass
