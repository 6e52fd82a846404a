"""The publisher writes what reconciles hand it on a thread of its own: a status once per
turn however many reconciles ended meanwhile, Events in order and bounded, and a write
that fails or hangs stops no other."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from promoter.kube.resources.publisher import Publisher
from tests.kube.cluster import wait_until


@pytest.fixture
def publisher() -> Iterator[Publisher]:
    publisher = Publisher(max_waiting=3)
    publisher.start()
    yield publisher
    publisher.stop(timeout=5)


def blocker() -> tuple[threading.Event, threading.Event, object]:
    """A write that holds the thread until released: (started, release, write)."""
    started, release = threading.Event(), threading.Event()

    def write() -> None:
        started.set()
        release.wait(10)

    return started, release, write


def test_reconciles_that_end_while_a_status_is_written_make_one_more_write(
    publisher: Publisher,
) -> None:
    started, release, write = blocker()
    publisher.latest("team.a", write)  # type: ignore[arg-type]
    assert started.wait(30)
    done: list[str] = []
    for n in range(5):
        publisher.latest("team.a", lambda n=n: done.append(f"a{n}"))  # type: ignore[misc]
    publisher.latest("team.b", lambda: done.append("b"))
    release.set()
    wait_until(publisher.idle, what="every write made")
    assert done == ["a4", "b"]
    assert publisher.idle()


def test_events_are_written_in_order_and_the_oldest_dropped_past_the_bound(
    publisher: Publisher, caplog: pytest.LogCaptureFixture
) -> None:
    started, release, write = blocker()
    publisher.append(write)  # type: ignore[arg-type]
    assert started.wait(30)
    done: list[int] = []
    with caplog.at_level(logging.WARNING, logger="promoter.kube.publisher"):
        for n in range(5):
            publisher.append(lambda n=n: done.append(n))  # type: ignore[misc]
    release.set()
    wait_until(publisher.idle, what="every write made")
    assert done == [2, 3, 4]
    assert publisher.dropped == 2
    assert [r.getMessage() for r in caplog.records] == ["kube writes dropped"]


def test_a_write_that_raises_is_logged_and_the_next_one_runs(
    publisher: Publisher, caplog: pytest.LogCaptureFixture
) -> None:
    done: list[str] = []

    def broken() -> None:
        raise RuntimeError("a bug")

    with caplog.at_level(logging.ERROR, logger="promoter.kube.publisher"):
        publisher.append(broken)
        publisher.latest("team.a", lambda: done.append("a"))
        wait_until(publisher.idle, what="every write made")
    assert done == ["a"]
    assert caplog.records[0].exc_info is not None


def test_a_hanging_write_holds_a_stop_no_longer_than_asked() -> None:
    publisher = Publisher()
    started, release, write = blocker()
    publisher.start()
    publisher.latest("team.a", write)  # type: ignore[arg-type]
    assert started.wait(30)
    assert not publisher.idle()
    begun = time.monotonic()
    publisher.stop(timeout=0.2)  # returns though the write still hangs (released below)
    assert time.monotonic() - begun >= 0.2
    release.set()


def test_stopping_writes_what_waits_unless_told_to_drop_it() -> None:
    for drop, expected in ((False, ["event", "a"]), (True, [])):
        publisher = Publisher()
        started, release, write = blocker()
        publisher.start()
        publisher.append(write)  # type: ignore[arg-type]
        assert started.wait(30)
        done: list[str] = []
        publisher.latest("team.a", lambda done=done: done.append("a"))  # type: ignore[misc]
        publisher.append(lambda done=done: done.append("event"))  # type: ignore[misc]
        publisher.stop(timeout=0, drop=drop)  # while a write is under way
        release.set()
        publisher.stop(timeout=5)
        assert done == expected, drop
        assert publisher.idle()
