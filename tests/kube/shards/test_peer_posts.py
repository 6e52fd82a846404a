"""The forwarder posts keys to several owners at once: an owner that does not answer
delays only its own keys, which wait (batched) for its call to end and then go on."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from promoter.kube.shards.forwarding.peers import PATH, PeerForwarder
from tests.kube.cluster import wait_until


class Owner:
    """A replica's keys endpoint on 127.0.0.1: answers 202, or hangs while ``hold`` is
    set; records the keys of every call in the order they came."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.hold = threading.Event()
        self.release = threading.Event()
        self.arrived = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:

                body = self.rfile.read(int(self.headers["content-length"]))
                assert self.path == PATH
                owner.arrived.set()
                if owner.hold.is_set():
                    owner.release.wait(10)
                owner.calls.append(json.loads(body)["keys"])
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def keys(self) -> list[str]:
        return [key for call in self.calls for key in call]


@pytest.fixture
def owners() -> Iterator[tuple[Owner, Owner]]:
    slow, fast = Owner(), Owner()
    yield slow, fast
    slow.release.set()
    for owner in (slow, fast):
        owner.server.shutdown()
        owner.server.server_close()


def test_an_owner_that_does_not_answer_delays_only_its_own_keys(
    owners: tuple[Owner, Owner],
) -> None:
    slow, fast = owners
    where = {"s": ("slow", slow.address), "f": ("fast", fast.address)}
    fell_back: list[str] = []
    forwarder = PeerForwarder(
        identity="me",
        token="secret",
        locate=lambda key: where[key[0]],
        fallback=fell_back.extend,
        timeout=5.0,
    )
    forwarder.start()
    try:
        slow.hold.set()
        forwarder.forward(["s.1"])
        wait_until(slow.arrived.is_set, what="the call to the slow owner")
        forwarder.forward(["f.1", "s.2"])  # the slow owner hangs until released below
        wait_until(lambda: fast.keys() == ["f.1"], what="the fast owner's key")
        forwarder.forward(["s.3"])
        assert slow.calls == []  # still hanging: its later keys wait, batched
        slow.release.set()
        wait_until(lambda: sorted(slow.keys()) == ["s.1", "s.2", "s.3"], what="the slow owner's")
        assert slow.calls[0] == ["s.1"] and sorted(slow.calls[1]) == ["s.2", "s.3"]
        assert fell_back == []
        wait_until(lambda: forwarder.sent == 4, what="every key counted")
    finally:
        forwarder.stop()
