"""A rate limit pauses every call on the credential, not only the call that met it."""

from __future__ import annotations

import pytest

from promoter.errors import ScmRateLimited
from promoter.metrics import sample
from scm_plugins.calls import ScmCalls
from scm_plugins.limiter import CredentialPause


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


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
    clock = Clock()
    first = ScmCalls("pause-a", lambda exc: None)
    first.pause = CredentialPause(clock)
    second = ScmCalls("pause-b", lambda exc: None)
    with pytest.raises(ScmRateLimited), first.call("x"):
        raise ScmRateLimited("429", retry_after=5)
    with second.call("x"):  # another credential goes on
        pass
    clock.now += 5
    with first.call("x"):
        pass


def test_a_shorter_pause_never_cuts_a_longer_one_short() -> None:
    clock = Clock()
    pause = CredentialPause(clock)
    pause.pause(60)
    clock.now += 10
    pause.pause(1)  # a call in flight meanwhile met a shorter limit (a secondary one)
    assert pause.remaining() == 50
    clock.now += 49
    assert pause.remaining() == 1


def test_a_pause_shorter_than_a_second_lasts_what_it_says() -> None:
    clock = Clock()
    pause = CredentialPause(clock)
    pause.pause(0.5)
    assert pause.remaining() == 0.5


def test_a_longer_pause_extends_a_shorter_one_and_a_negative_one_changes_nothing() -> None:
    clock = Clock()
    pause = CredentialPause(clock)
    assert pause.remaining() == 0
    pause.pause(1)
    pause.pause(30)
    assert pause.remaining() == 30
    pause.pause(-100)
    assert pause.remaining() == 30
    clock.now += 29.5
    pause.pause(0.25)  # a short one inside the longer one changes nothing either
    assert pause.remaining() == 0.5
    clock.now += 31
    assert pause.remaining() == 0  # never negative once it is over
