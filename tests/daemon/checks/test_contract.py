"""The contract every gate backend goes through (``GateCalls``): a deadline on each call,
a bound on the calls in flight per backend, and a verdict in the backend's words instead
of any exception."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from promoter.daemon.checks.gate_calls import Garbage, GateCalls, Unreachable, words_of
from promoter.models import CommitStatus, Phase
from promoter.redaction import remember
from tests.faults.standins import Standin


def hang(release: threading.Event) -> CommitStatus:
    release.wait(10)
    raise AssertionError("answered after all")


def test_a_call_that_does_not_answer_is_given_up_at_its_deadline() -> None:
    calls, release = GateCalls(), threading.Event()
    started = time.monotonic()
    judged = calls.judge(
        key="promoter/smoke", what="check", backend="b", timeout=0.2, check=lambda: hang(release)
    )
    took = time.monotonic() - started
    release.set()
    assert took >= 0.2  # and no longer than that: the words say it gave up, not the hang
    assert judged.trouble
    assert judged.status.phase is Phase.PENDING
    assert judged.status.description == "check not reachable: no answer within 0.2s"


def test_a_backend_with_its_calls_unanswered_refuses_more_at_once_and_no_other() -> None:
    calls, release = GateCalls(per_backend=2), threading.Event()
    for _ in range(2):
        with pytest.raises(Unreachable):
            calls.call("stuck", lambda: hang(release), timeout=0.05)
    with pytest.raises(Unreachable, match="no answer to 1 earlier calls yet"):  # one at a time
        calls.call("stuck", lambda: hang(release), timeout=5)  # not its 5 s: refused at once
    assert calls.call("other", lambda: "fine", timeout=60) == "fine"
    release.set()
    deadline = time.monotonic() + 60
    while calls.in_flight("stuck") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls.call("stuck", lambda: "answered", timeout=60) == "answered"


def test_every_exception_becomes_a_pending_verdict_in_the_backends_words() -> None:
    calls = GateCalls()

    def judge(error: Exception) -> CommitStatus:
        def check() -> CommitStatus:
            raise error

        judged = calls.judge(key="k", what="Argo CD", backend="a", timeout=5, check=check)
        assert judged.trouble
        assert judged.status.phase is Phase.PENDING
        return judged.status

    assert judge(Garbage("not JSON: <html>")).description == (
        "Argo CD answered garbage: not JSON: <html>"
    )
    assert judge(KeyError("items")).description == "Argo CD not reachable: 'items'"
    assert judge(Unreachable("answered 503: down")).description == (
        "Argo CD not reachable: answered 503: down"
    )


def test_the_words_are_the_deepest_cause_clipped_and_without_secrets() -> None:
    remember("s3cr3t-token-value")
    with Standin(lambda *_: (200, "text/plain", b"")) as server:
        server.mode = "reset"
        with pytest.raises(requests.ConnectionError) as caught:
            requests.get(server.url, timeout=5)
    assert words_of(caught.value) == "[Errno 104] Connection reset by peer"
    words = words_of(RuntimeError("token s3cr3t-token-value refused\n" + "x" * 300))
    assert words.startswith("token *** refused x")
    assert len(words) == 100 and words.endswith("…")


def test_an_answer_that_trickles_in_is_cut_at_the_checks_deadline() -> None:
    from promoter.config.gates import HttpCheck
    from promoter.daemon.checks.backends import Target, http_check

    def verdict(*_: object) -> tuple[int, str, bytes]:
        return 200, "application/json", b'{"verdict": "success"}'

    with Standin(verdict) as server:
        server.mode = "slow"  # a byte every 50 ms: each read answers before its timeout
        spec = HttpCheck(url=f"{server.url}/{{sha}}", expression="verdict", timeout=0.3)
        target = Target("s", "environment/dev", "a" * 40, "b" * 40)
        with pytest.raises(Unreachable, match=r"answer not complete after \d+ bytes"):
            http_check("promoter/smoke", spec, target, requests.Session())  # cut, not read


def test_calls_given_at_once_to_a_backend_run_at_once_even_with_a_thread_idle() -> None:
    from promoter.daemon.checks.lanes import Lane

    lane, done = Lane("test", 2, idle=5.0), threading.Event()
    lane.submit(done.set)
    assert done.wait(30)  # one thread now waits idle for work
    both = threading.Barrier(2, timeout=60)  # one thread running both would never meet
    met: list[bool] = []

    def meet() -> None:
        both.wait()
        met.append(True)

    lane.submit(meet)
    lane.submit(meet)
    deadline = time.monotonic() + 120
    while len(met) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    lane.close()
    assert met == [True, True]
