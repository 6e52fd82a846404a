"""The faults of ``bench/shards.py`` at the edges of sharding, read from outside.

What each replica wrote and when is read back from the API stand-in's journal (every
Lease and Event write, timed as it arrived: ``tests/kube/fake_api_faults.py``) and from
the replicas' audit log of SCM writes (timed as they were sent):

- **outage**: the API server answers every request with 500 (``broken``), or holds
  every request unanswered (``hung``), for longer than the lease; hand-overs are the
  shard Leases acquired by another replica than the one holding them before, from the
  start of the outage until a few leases after its end (the target: 0);
- **pauses**: replicas frozen (SIGSTOP, then SIGCONT) at random, for 0.3 to 1.6 leases,
  ``count`` times, under a stream of changes; a write is *after its hold* when the Lease
  of its shard, as the API server last had it when the write was sent, names another
  holder or had lapsed (renewTime + leaseDurationSeconds); the same for Events, as the
  API server received them (the targets: 0 and 0);
- **takeover -> promotion**: after a kill -9, from the moment the new owner's Lease of
  a shard was written to the merge of the pending change of a repository in it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import httpx


class Carrier(Protocol):
    def run(self, strategies: list[int], rate: float, **kwargs: Any) -> list[Any]: ...


def set_fault(api: str, fault: str) -> None:
    httpx.post(api + "/debug/fault", json={"fault": fault}, timeout=10).raise_for_status()


def journal(api: str, since: float) -> list[dict[str, Any]]:
    answer = httpx.get(api + "/debug/journal", params={"since": since}, timeout=60)
    found: list[dict[str, Any]] = answer.json()
    return found


def _epoch(stamp: str | None) -> float:
    if not stamp:
        return 0.0
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def handovers(entries: list[dict[str, Any]], before: dict[str, str]) -> list[dict[str, Any]]:
    """Shard Leases acquired by another replica than the last one holding them."""
    last = dict(before)
    moved = []
    for e in entries:
        if e["kind"] != "lease" or e["role"] != "shard" or not e["holder"]:
            continue
        previous = last.get(e["name"])
        if previous and previous != e["holder"]:
            moved.append({"lease": e["name"], "from": previous, "to": e["holder"], "at": e["at"]})
        last[e["name"]] = e["holder"]
    return moved


def outage(cluster: Any, fault: str, seconds: float, settle: float) -> dict[str, Any]:
    """The API server down (``fault``) for ``seconds``, then ``settle`` seconds watched."""
    before = cluster.leases()
    started = time.time()
    set_fault(cluster.api, fault)
    time.sleep(seconds)
    set_fault(cluster.api, "")
    ended = time.time()
    time.sleep(settle)
    entries = journal(cluster.api, started)
    alive = [n for n, r in cluster.replicas.items() if r.proc.poll() is None]
    moved = handovers(entries, before)
    for m in moved:
        at = m.pop("at")
        m["after_s"] = round(at - ended, 2)
        last = [
            e["at"]
            for e in entries
            if e["kind"] == "lease" and e["holder"] == m["from"] and e["at"] < at
        ]
        m["from_last_wrote_s"] = round(max(last, default=started) - ended, 2)
    return {
        "fault": fault,
        "seconds": seconds,
        "handovers": len(moved),
        "moved": moved,
        "replicas_alive": len(alive),
    }


class Holds:
    """Each shard Lease's history, as the API server received it."""

    def __init__(self, entries: list[dict[str, Any]], shards: dict[str, str]) -> None:
        self.history: dict[str, list[tuple[float, str, float]]] = {}
        for e in entries:
            if e["kind"] == "lease" and e["role"] == "shard":
                expires = _epoch(e["renewed"]) + float(e["duration"] or 0)
                self.history.setdefault(e["name"], []).append((e["at"], e["holder"], expires))
        self.shard_of = shards
        """repository -> its shard's Lease name."""

    def lapsed(self, replica: str, repository: str, at: float) -> bool | None:
        """Whether ``replica`` did not hold ``repository``'s shard at ``at`` (None: no
        Lease write of that shard seen before ``at``)."""
        lease = self.shard_of.get(repository)
        seen = [h for h in self.history.get(lease or "", []) if h[0] <= at]
        if not seen:
            return None
        _, holder, expires = seen[-1]
        return holder != replica or expires < at

    def why(self, replica: str, repository: str, at: float) -> dict[str, Any]:
        """For a write or Event past its hold: who held the shard then, and how long
        after the Lease (as last written) expired it arrived."""
        lease = self.shard_of.get(repository, "")
        _, holder, expires = [h for h in self.history.get(lease, []) if h[0] <= at][-1]
        return {"by": replica, "lease": lease, "holder": holder, "after_expiry_s": at - expires}


def shard_leases(cluster: Any) -> dict[str, str]:
    """repository -> the name of its shard's Lease (shards are placed by hash: stable)."""
    leases = list(cluster.leases())
    found: dict[str, str] = {}
    for shard in cluster.table(cluster.live()[0])["shards"]:
        name = next((n for n in leases if n.endswith("-" + shard["name"])), shard["name"])
        for repository in shard["repositories"]:
            found[repository] = name
    return found


def pauses(
    cluster: Any, stream: Carrier, changes: list[int], *, count: int, rate: float, repos: int
) -> dict[str, Any]:
    """``count`` SIGSTOP pauses of random replicas under a stream of ``changes``."""
    lease = cluster.args.lease
    rng = random.Random(62)
    started = time.time()
    frozen: list[tuple[str, float]] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        carried = pool.submit(stream.run, changes, rate)
        for _ in range(count):
            victim = rng.choice(cluster.live())
            pid = cluster.replicas[victim].proc.pid
            pause = rng.uniform(0.3, 1.6) * lease
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(pause)
            finally:
                os.kill(pid, signal.SIGCONT)
            frozen.append((victim, round(pause, 2)))
            time.sleep(rng.uniform(0.5, 2.0))
        done = carried.result()
    time.sleep(2 * lease)
    holds = Holds(journal(cluster.api, started - 3 * lease), shard_leases(cluster))
    writes = after = unknown = 0
    for line in Path(cluster.audit).read_text().splitlines():
        entry = json.loads(line)
        sent = entry.get("sent", entry["at"])
        if sent < started:
            continue
        writes += 1
        lapsed = holds.lapsed(entry["replica"], entry["repo"], sent)
        after += lapsed is True
        unknown += lapsed is None
    events = stale = 0
    late: list[dict[str, Any]] = []
    for e in journal(cluster.api, started):
        if e["kind"] != "event" or not e["instance"]:
            continue
        events += 1
        index = int(str(e["name"]).rsplit("-", 1)[-1])
        repository = f"bench.gitops-{index % repos}"
        lapsed = holds.lapsed(e["instance"], repository, e["at"])
        stale += lapsed is True
        unknown += lapsed is None
        if lapsed:
            late.append({"event": e["name"], **holds.why(e["instance"], repository, e["at"])})
    return {
        "pauses": len(frozen),
        "longest_pause_s": max((p for _, p in frozen), default=0.0),
        "changes": len(changes),
        "lost": sum(1 for c in done if not c.merged),
        "scm_writes": writes,
        "writes_after_hold": after,
        "unknown_shard": unknown,
        "events": events,
        "unfenced_events": stale,
        "unfenced": [
            {k: round(v, 2) if isinstance(v, float) else v for k, v in x.items()} for x in late
        ],
    }


def takeover_to_promotion(
    api: str, killed: float, victim: str, shards: dict[str, str], done: list[Any]
) -> dict[str, Any]:
    """From each new owner's Lease of the victim's shards to its repositories' merges."""
    taken: dict[str, float] = {}
    for e in journal(api, killed):
        if e["kind"] == "lease" and e["role"] == "shard" and e["holder"] not in ("", victim):
            taken.setdefault(e["name"], e["at"])
    delays = sorted(
        c.merged - taken[shards[c.repo]] for c in done if c.merged and shards.get(c.repo) in taken
    )
    return {
        "takeover_to_merge_max_s": round(delays[-1], 2) if delays else None,
        "takeover_to_merge_p50_s": round(delays[len(delays) // 2], 2) if delays else None,
    }


def kill_one(
    cluster: Any, stream: Any, fleet: Any, unused: list[int], count: int
) -> dict[str, Any]:
    """kill -9 of a random replica, then changes to its repositories (``ci`` green)."""
    victim = random.choice(cluster.live())
    repos = {
        r
        for shard in cluster.table(victim)["shards"]
        if shard["holder"] == victim
        for r in shard["repositories"]
    }
    theirs = [i for i in unused if f"bench.gitops-{i % fleet.repos}" in repos][:count]
    for i in theirs:
        unused.remove(i)
    shards = shard_leases(cluster)
    killed = time.time()
    cluster.kill(victim)
    with ThreadPoolExecutor(max_workers=max(1, len(theirs))) as pool:
        done = list(pool.map(lambda i: stream.carry(i, green=True), theirs))
    after = [c.merged - killed for c in done if c.merged]
    return {
        **takeover_to_promotion(cluster.api, killed, victim, shards, done),
        "victim": victim,
        "changes": len(theirs),
        "lost": len(theirs) - len(after),
        "kill_to_merge_max_s": round(max(after, default=float("inf")), 2),
        "kill_to_merge_p50_s": round(statistics.median(after), 2) if after else None,
    }
