"""The forwarder's kept connections to its peers, against peers that misbehave the way a
replica under load or going away does: closing an idle connection, hanging, answering
something that is not HTTP, refusing the connection."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from promoter.kube.shards.forwarding.peer_connections import PeerConnections, PeerError

ANSWER = b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


class Peer:
    """A TCP server on 127.0.0.1 that reads one request at a time from each connection and
    lets ``behave(n)`` answer the n-th request of the whole peer (0-based): it returns the
    bytes to send, and whether to close the connection after them."""

    def __init__(self, behave: Callable[[int], tuple[bytes, bool]]) -> None:
        self.behave = behave
        self.requests: list[tuple[int, bytes]] = []
        """(connection number, request line) of every request read, in order."""
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"http://127.0.0.1:{self._server.getsockname()[1]}/prefix/"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            number = self.connections
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            reader = conn.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b""):
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":", 1)[1])
                reader.read(length)
                index = len(self.requests)
                self.requests.append((number, line.strip()))
                data, close = self.behave(index)
                try:
                    conn.sendall(data)
                except OSError:
                    return
                if close:
                    conn.shutdown(socket.SHUT_RDWR)
                    return

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._server.close()


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    made: list[Peer] = []
    yield made
    for peer in made:
        peer.stop()


def post(connections: PeerConnections, peer: Peer) -> int:
    return connections.post(peer.address, "/internal/v1/keys", b'{"keys": []}', dict)


def test_one_kept_connection_serves_every_call_to_a_peer_under_its_address_path(
    peers: list[Peer],
) -> None:
    peer = Peer(lambda n: (ANSWER, False))
    peers.append(peer)
    connections = PeerConnections(timeout=30.0)
    try:
        assert [post(connections, peer) for _ in range(3)] == [202, 202, 202]
    finally:
        connections.close()
    assert peer.connections == 1
    assert [line for _, line in peer.requests] == [b"POST /prefix/internal/v1/keys HTTP/1.1"] * 3


def test_a_connection_the_peer_closed_while_idle_is_opened_again_and_the_call_sent_again(
    peers: list[Peer],
) -> None:
    """The first call's answer comes, then the peer closes the connection without saying
    so in the answer (an idle timeout, a restart): the next call finds it closed."""
    peer = Peer(lambda n: (ANSWER, n == 0))
    peers.append(peer)
    connections = PeerConnections(timeout=30.0)
    try:
        assert post(connections, peer) == 202
        time.sleep(0.1)
        assert post(connections, peer) == 202
    finally:
        connections.close()
    assert [number for number, _ in peer.requests] == [1, 2]


def test_a_peer_that_hangs_is_an_error_within_the_timeout_and_is_not_asked_twice(
    peers: list[Peer],
) -> None:
    hang = threading.Event()
    peer = Peer(lambda n: (b"", hang.wait(60)))
    peers.append(peer)
    connections = PeerConnections(timeout=0.3)
    try:
        with pytest.raises(PeerError, match="timed out"):
            post(connections, peer)  # at its 0.3 s: the peer answers only once released
        assert not hang.is_set()
    finally:
        hang.set()
        connections.close()
    assert len(peer.requests) == 1


@pytest.mark.parametrize(
    "garbage", [b"hello\r\n\r\n", b"HTTP/1.1 two hundred\r\n\r\n", b"\x00\xff" * 10]
)
def test_an_answer_that_is_not_http_is_an_error_and_the_next_call_starts_afresh(
    peers: list[Peer], garbage: bytes
) -> None:
    peer = Peer(lambda n: (garbage, True) if n == 0 else (ANSWER, False))
    peers.append(peer)
    connections = PeerConnections(timeout=30.0)
    try:
        with pytest.raises(PeerError):
            post(connections, peer)
        assert post(connections, peer) == 202
    finally:
        connections.close()
    assert [number for number, _ in peer.requests] == [1, 2]


def test_a_peer_that_is_gone_is_an_error_each_time() -> None:
    with socket.create_server(("127.0.0.1", 0)) as gone:
        address = f"http://127.0.0.1:{gone.getsockname()[1]}"
    connections = PeerConnections(timeout=30.0)
    try:
        for _ in range(2):
            with pytest.raises(PeerError, match="refused"):
                connections.post(address, "/internal/v1/keys", b"{}", dict)
    finally:
        connections.close()
    assert connections._all == []


def test_closing_ends_every_threads_connections_and_refuses_new_ones(peers: list[Peer]) -> None:
    peer = Peer(lambda n: (ANSWER, False))
    peers.append(peer)
    connections = PeerConnections(timeout=30.0)
    threads = [threading.Thread(target=post, args=(connections, peer)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peer.connections == 3  # one per posting thread
    kept = list(connections._all)
    connections.close()
    assert all(connection.sock is None for connection in kept)
    with pytest.raises(PeerError):
        post(connections, peer)


@pytest.mark.parametrize(
    "address", ["http://127.0.0.1:notaport", "127.0.0.1:8080", "ftp://127.0.0.1", "http://[::1"]
)
def test_an_address_that_is_no_peers_url_is_an_error_not_a_crash(address: str) -> None:
    connections = PeerConnections(timeout=30.0)
    with pytest.raises(PeerError, match="not a peer's address"):
        connections.post(address, "/internal/v1/keys", b"{}", {})
    connections.close()
