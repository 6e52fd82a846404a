"""Work handed from one replica to the owner of its repository, over HTTP, signed.

A webhook or an API refresh may reach any replica. The keys it wakes that belong to a
shard held elsewhere are posted to the holder's address (the one its member Lease names)
at ``/internal/v1/keys``, on a thread of its own, never in the request; keys for one
owner arriving together go in one call, and the calls to different owners go at once (an
owner slow to answer, busy taking shards over, delays only its own keys). The call is
signed with the replicas' shared secret for the owner it is sent to
(``promoter.kube.shards.forwarding.signing``: a timestamp, a nonce, the method and path, the body;
the owner refuses one stale, replayed or signed for another replica); it is a
replica's call, never a browser's (``promoter.kube.shards.routes`` refuses one that
carries a browser's headers or is not JSON). The other calls between replicas (a
strategy list, a request passed to the owner) are signed the same way. When the owner
is not known (its shard is changing hands), does not answer, or no secret is set, the
keys take the slower road through the API server (``RefreshForwarder``'s annotation),
and the next owner reads every strategy of a shard it takes over afresh anyway: nothing
is lost when the owner changes mid-flight.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import Counter as MetricCounter
from prometheus_client import Histogram

from promoter.kube.shards.forwarding.peer_connections import PeerConnections, PeerError
from promoter.kube.shards.forwarding.signing import SIGNATURE, sign
from promoter.metrics import REGISTRY

log = logging.getLogger("promoter.kube.peers")

PATH = "/internal/v1/keys"
KEYS = f"POST {PATH}"
"""What a forwarding of keys signs besides its body."""
JSON = {"content-type": "application/json"}
OWNERS_AT_ONCE = 8
"""Owners posted to at the same time (one call each): a replica's peers, at most."""

FORWARDED = MetricCounter(
    "promoter_forwarded_keys_total",
    "Strategy keys handed to the replica that owns them, by the road they took",
    ["replica", "via"],
    registry=REGISTRY,
)
FORWARD_SECONDS = Histogram(
    "promoter_forward_seconds",
    "From keys handed to the forwarder to their owner's answer that it queued them",
    ["replica"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
    registry=REGISTRY,
)


Locate = Callable[[str], tuple[str, str] | None]
"""A strategy key -> (the replica that holds it, its address), None when not known."""


class PeerForwarder:
    """Posts keys to their owners; the ones it cannot deliver go to ``fallback``."""

    def __init__(
        self,
        *,
        identity: str,
        token: str | None,
        locate: Locate,
        fallback: Callable[[list[str]], None],
        timeout: float = 2.0,
    ) -> None:
        self.identity = identity
        self.token = token
        self.locate = locate
        self.fallback = fallback
        self.sent = 0
        self._connections = PeerConnections(timeout)
        self._pending: dict[tuple[str, bool], tuple[set[str], float]] = {}
        """(address, wake) -> the keys for it, and when the first of them came."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peer-forwarder", daemon=True)
        self._busy: Counter[str] = Counter()
        """Calls in flight, by owner address."""
        self._posts = ThreadPoolExecutor(OWNERS_AT_ONCE, thread_name_prefix="peer-post")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        self._posts.shutdown(wait=True)
        self._connections.close()

    def forward(self, keys: list[str], *, wake: bool = False) -> None:
        """Hand ``keys`` (not ours) to their owners, soon; ``wake``: only a status changed."""
        lost: list[str] = []
        with self._lock:
            for key in keys:
                found = self.locate(key) if self.token else None
                if found is None or not found[1] or found[0] == self.identity:
                    lost.append(key)
                else:
                    batch = self._pending.setdefault((found[1], wake), (set(), time.monotonic()))
                    batch[0].add(key)
        if lost:
            self._fall_back(lost)
        self._wake.set()

    def _fall_back(self, keys: list[str]) -> None:
        FORWARDED.labels(self.identity, "annotation").inc(len(keys))
        self.fallback(keys)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                batches = self._ready()
            for (address, wake), (keys, since) in batches.items():
                self._posts.submit(self._deliver, address, sorted(keys), wake, since)

    def _ready(self) -> dict[tuple[str, bool], tuple[set[str], float]]:
        """Under ``_lock``: the batches to post now, those of owners not answering a call
        already (theirs wait, and grow, until it ends)."""
        ready = {k: v for k, v in self._pending.items() if not self._busy[k[0]]}
        for key in ready:
            del self._pending[key]
            self._busy[key[0]] += 1
        return ready

    def _deliver(self, address: str, keys: list[str], wake: bool, since: float) -> None:
        try:
            self._post(address, keys, wake, since)
        finally:
            with self._lock:
                self._busy[address] -= 1
            self._wake.set()

    def _post(self, address: str, keys: list[str], wake: bool, since: float) -> None:
        assert self.token is not None
        body = json.dumps({"keys": keys, "wake": wake, "from": self.identity}).encode()
        token = self.token

        def headers() -> dict[str, str]:
            """Signed afresh for each attempt (a nonce is good once)."""
            signature = sign(token, body, what=KEYS, to=address, headers=JSON)
            return {**JSON, SIGNATURE: signature}

        try:
            delivered = self._connections.post(address, PATH, body, headers) == 202
        except PeerError as exc:
            log.info("owner did not answer", extra={"address": address, "error": str(exc)})
            delivered = False
        if delivered:
            with self._lock:
                self.sent += len(keys)
            FORWARDED.labels(self.identity, "peer").inc(len(keys))
            FORWARD_SECONDS.labels(self.identity).observe(time.monotonic() - since)
            log.debug("keys forwarded", extra={"address": address, "keys": len(keys)})
        else:
            self._fall_back(keys)
