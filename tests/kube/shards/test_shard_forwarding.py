"""Webhooks and API calls may reach any sharded replica: the keys go to the owner over
signed HTTP (or, when it does not answer, through the strategy's annotation), and the
API of any replica shows every strategy with the replica that works on it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from promoter.cli.client import ApiClient
from promoter.cli.status_table import render
from promoter.errors import NotOwner
from promoter.kube.controller import Controller
from promoter.kube.resources.specs import REFRESH_ANNOTATION
from promoter.kube.shards import routes as shard_api
from promoter.kube.shards.forwarding.peers import KEYS, PATH
from promoter.kube.shards.forwarding.signing import SIGNATURE, sign
from tests.kube.cluster import NS, PEER_TOKEN, Cluster, fake_cluster, wait_until
from tests.kube.shard_helpers import fleet, holders, owner_of, promoted, settled

JSON = {"content-type": "application/json"}


class Ticking:
    """A clock that moves on by ``step`` each time it is read: the time it tells counts
    the looks taken, whatever the machine's load."""

    def __init__(self, step: float = 0.01) -> None:
        self.step = step
        self._now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self._now += self.step
            return self._now


def two_replicas(cluster: Cluster, root: Path) -> tuple[Controller, Controller, str]:
    """a and b over four repositories, settled, every strategy read; one strategy of a's."""
    repos = fleet(cluster, root, 4)
    a, b = cluster.sharded("a"), cluster.sharded("b")
    wait_until(lambda: settled(cluster, [a, b]), what="a and b to settle")
    for name, repo in repos.items():
        wait_until(lambda: promoted(cluster, name, repo.tip("main")), what=f"{name} read")  # noqa: B023

    def read_by_owner(name: str) -> bool:
        owner = owner_of([a, b], name)
        return owner is not None and owner.runtime.view(f"{NS}.{name}") is not None

    wait_until(lambda: all(map(read_by_owner, repos)), what="every strategy read by its owner")
    theirs = next((n for n in repos if owner_of([a, b], n) is a), None)
    assert theirs is not None, "a holds no repository"
    return a, b, theirs


def statuses_of(
    cluster: Cluster, owner: Controller, strategy: str, *, via: str
) -> tuple[str, str, str]:
    """The repository of ``strategy``, the commit its first environment runs, and the URL
    to post a status on it through replica ``via``."""
    repo = f"{NS}.repo-{strategy.removeprefix('app-')}"
    view = owner.runtime.view(f"{NS}.{strategy}")
    assert view is not None and view.snapshot is not None
    sha = view.snapshot.environments[0].active.hydrated_sha
    url = f"{cluster.addresses[via]}/api/v1/repositories/{repo}/commits/{sha}/statuses"
    return repo, sha, url


def annotation(cluster: Cluster, strategy: str) -> Any:
    obj = cluster.fake.get("promotionstrategies", NS, strategy) or {}
    return (obj["metadata"].get("annotations") or {}).get(REFRESH_ANNOTATION)


def received(replica: Controller) -> list[tuple[float, list[str]]]:
    """Record when forwarded keys reach ``replica``."""
    seen: list[tuple[float, list[str]]] = []
    runtime = replica.runtime
    original = runtime.receive

    def receive(keys: Any, *, wake: bool) -> list[str]:
        keys = list(keys)
        seen.append((time.perf_counter(), keys))
        return original(keys, wake=wake)

    runtime.receive = receive  # type: ignore[method-assign]
    return seen


def test_a_refresh_sent_to_another_replica_reaches_the_owner_over_signed_http(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        seen = received(a)
        before = annotation(cluster, strategy)
        answer = httpx.post(
            cluster.addresses["b"] + "/api/v1/refresh", json={"strategy": f"{NS}.{strategy}"}
        )
        assert answer.status_code == 202, answer.text
        wait_until(lambda: seen, what="the keys at the owner")
        _, keys = seen[0]  # how soon: bench/shards.py's forwarding figure, not a bound here
        assert keys == [f"{NS}.{strategy}"]
        assert b.sharding is not None
        wait_until(lambda: b.sharding.peers.sent == 1, what="b to count the delivery")
        assert annotation(cluster, strategy) == before, "the refresh went by the annotation"


def test_forwarded_keys_without_a_good_signature_or_from_a_browser_are_refused(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, _, strategy = two_replicas(cluster, tmp_path)
        seen = received(a)
        url = cluster.addresses["a"] + PATH
        body = json.dumps({"keys": [f"{NS}.{strategy}"]}).encode()

        def signed(
            token: str = PEER_TOKEN,
            data: bytes = body,
            now: float | None = None,
            what: str = KEYS,
            to: str = cluster.addresses["a"],
        ) -> dict[str, str]:
            return {SIGNATURE: sign(token, data, now, what=what, to=to, headers=JSON)}

        forged = {
            "none": {},
            "wrong secret": signed(token="not-the-secret"),
            "an hour old": signed(now=time.time() - 3600),
            "a minute ahead": signed(now=time.time() + 60),
            "another body": signed(data=b'{"keys": []}'),
            "another call": signed(what="GET /api/v1/shards"),
            "signed for another replica": signed(to=cluster.addresses["b"]),
            "garbage": {SIGNATURE: "t=abc,v1=zz"},
            "a browser's, signed": {**signed(), "origin": cluster.addresses["a"]},
            "a page's fetch, signed": {**signed(), "sec-fetch-site": "same-origin"},
        }
        for why, headers in forged.items():
            answer = httpx.post(url, content=body, headers={**JSON, **headers})
            assert answer.status_code == 403, why
        plain = {**signed(), "content-type": "text/plain"}
        assert httpx.post(url, content=body, headers=plain).status_code == 403, "type signed"
        garbled = b"[not json"
        assert (
            httpx.post(url, content=garbled, headers={**JSON, **signed(data=garbled)}).status_code
            == 400
        )
        assert seen == []
        good = {**JSON, **signed()}
        answer = httpx.post(url, content=body, headers=good)
        assert answer.status_code == 202
        assert len(seen) == 1
        replayed = httpx.post(url, content=body, headers=good)  # the same call, captured
        assert replayed.status_code == 403
        assert len(seen) == 1


def test_keys_for_an_owner_that_does_not_answer_go_through_the_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_cluster(tmp_path) as cluster:
        _, b, strategy = two_replicas(cluster, tmp_path)
        assert b.sharding is not None
        unreachable = ("a", "http://127.0.0.1:9")  # nothing listens there
        monkeypatch.setattr(b.sharding.coordinator, "holder_of", lambda shard: unreachable)
        before = annotation(cluster, strategy)
        b.runtime.enqueue([f"{NS}.{strategy}"])
        wait_until(lambda: annotation(cluster, strategy) != before, what="the annotation")
        assert b.sharding.peers.sent == 0


def test_any_replica_lists_every_strategy_with_its_owner_and_passes_writes_to_it(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        summaries = httpx.get(cluster.addresses["b"] + "/api/v1/strategies").json()["strategies"]
        assert {s["owner"] for s in summaries} == {"a", "b"}
        assert {e["state"] for s in summaries for e in s["environments"]} == {"up-to-date"}
        client = ApiClient(cluster.addresses["b"])
        try:
            listed = {s["name"]: s for s in client.strategies()}
            assert len(listed) == 4
            for name, summary in listed.items():
                owner = owner_of([a, b], name.removeprefix(f"{NS}."))
                assert owner is not None and summary["owner"] == owner.settings.identity
                states = {e["state"] for e in summary["environments"]}
                assert states == {"up-to-date"}, str(summary)
            assert "REPLICA" in render(client.strategies()).splitlines()[0]
            page = httpx.get(f"{cluster.addresses['b']}/dashboard/{NS}.{strategy}").text
            assert "replica <code>a</code>" in page
            detail = client.strategy(f"{NS}.{strategy}")
            assert detail["owner"] == "a" and detail["environments"][0]["state"] == "up-to-date"

            shards = httpx.get(cluster.addresses["b"] + "/api/v1/shards").json()
            assert {m["identity"] for m in shards["members"]} == {"a", "b"}
            assert {s["name"]: s["holder"] for s in shards["shards"]} == {
                shard: holder for shard, holder in holders(cluster).items() if holder
            }

            repo = f"{NS}.repo-{strategy.removeprefix('app-')}"
            view = a.runtime.view(f"{NS}.{strategy}")
            assert view is not None and view.snapshot is not None
            sha = view.snapshot.environments[0].active.hydrated_sha
            posted = client.set_status(repo, sha, key="ci", phase="success", force=True)
            assert posted["enqueued"] == [f"{NS}.{strategy}"]
            statuses = a.runtime.status_cache.get(repo, sha) or []
            assert [s.key for s in statuses] == ["ci"]
        finally:
            client.close()


def test_a_webhooks_key_that_is_not_ours_any_more_when_its_turn_comes_goes_to_its_owner(
    tmp_path: Path,
) -> None:
    """A background read of it is dropped: the owner's take-over reads it anyway."""
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        seen = received(a)
        key = f"{NS}.{strategy}"
        b.runtime.queue.add(key)  # a background read queued on b before its shard moved
        wait_until(lambda: b.runtime.queue.idle() or None, what="b to take the key")
        time.sleep(0.5)
        assert seen == []
        b.runtime.queue.add(key)  # queued on b by a webhook, as if before its shard moved
        b.runtime.queue.hurry([key])
        wait_until(lambda: seen, what="the key at its owner")
        assert seen[0][1] == [key]


def test_a_status_posted_while_its_shard_moves_waits_for_the_next_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI job's status post reaching a replica while the repository's shard has no
    holder (the old owner finishing its writes, the next one taking the Lease) is held
    until the move ends and then passed on, not refused at once; past ``MOVE_WAIT`` it
    is refused 503 with ``Retry-After``."""
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        repo, sha, url = statuses_of(cluster, a, strategy, via="b")
        body = {"key": "ci", "phase": "success", "force": True}
        sharding = b.sharding
        assert sharding is not None
        locate = sharding.locate_repository
        moved_at = time.monotonic() + 0.5

        def moving(repository: str) -> tuple[str, str] | None:
            return None if time.monotonic() < moved_at else locate(repository)

        monkeypatch.setattr(sharding, "locate_repository", moving)
        started = time.monotonic()
        answer = httpx.post(url, json=body, headers=JSON, timeout=10)
        assert answer.status_code == 201, answer.text
        assert time.monotonic() - started >= 0.5
        assert answer.json()["enqueued"] == [f"{NS}.{strategy}"]
        assert [s.key for s in a.runtime.status_cache.get(repo, sha) or []] == ["ci"]

        monkeypatch.setattr(shard_api, "MOVE_WAIT", 0.3)
        monkeypatch.setattr(sharding, "locate_repository", lambda repository: None)
        started = time.monotonic()
        answer = httpx.post(url, json=body, headers=JSON, timeout=10)
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert "changing" in answer.json()["error"]
        assert time.monotonic() - started >= 0.3  # it waited, then gave up (no upper bound:
        # how long past MOVE_WAIT a loaded machine answers is no part of the rule)


@pytest.mark.parametrize("via", ["a", "b"])
def test_a_write_refused_because_its_shard_moved_meanwhile_is_answered_after_the_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    """The replica that works on a repository began a status post (posted to it, or
    passed to it by the replica it was posted to), and its fence refused the write
    because the shard started moving (nothing written, its answer says so): the replica
    that was asked answers the post once the shard has a holder again (here the same
    owner, its hold back), not 503 for the caller to retry. Past ``MOVE_WAIT``, the 503
    says so."""
    with fake_cluster(tmp_path) as cluster:
        a, _, strategy = two_replicas(cluster, tmp_path)
        repo, sha, url = statuses_of(cluster, a, strategy, via=via)
        body = {"key": "ci", "phase": "success", "force": True}
        post_status = a.runtime.post_status
        refusals: list[int] = []

        def moving_once(*args: Any, **kwargs: Any) -> Any:
            if len(refusals) < 2:
                refusals.append(1)
                raise NotOwner(f"the shard of {repo} moved meanwhile")
            return post_status(*args, **kwargs)

        monkeypatch.setattr(a.runtime, "post_status", moving_once)
        answer = httpx.post(url, json=body, headers=JSON, timeout=10)
        assert answer.status_code == 201, answer.text
        assert len(refusals) == 2 and answer.json()["enqueued"] == [f"{NS}.{strategy}"]
        assert [s.key for s in a.runtime.status_cache.get(repo, sha) or []] == ["ci"]

        def moved(*args: Any, **kwargs: Any) -> Any:
            raise NotOwner(f"the shard of {repo} moved meanwhile")

        monkeypatch.setattr(a.runtime, "post_status", moved)
        monkeypatch.setattr(shard_api, "MOVE_WAIT", 0.3)
        started = time.monotonic()
        answer = httpx.post(url, json=body, headers=JSON, timeout=10)
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        assert "moved meanwhile" in answer.json()["error"]
        assert time.monotonic() - started >= 0.3


def test_a_write_waits_for_moves_no_longer_than_move_wait_in_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A status post that first waited for its shard to have a holder, then was refused
    by that holder as moving, waits ``MOVE_WAIT`` in all from when it came, not a fresh
    ``MOVE_WAIT`` for each of the two waits."""
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        repo, _, url = statuses_of(cluster, a, strategy, via="b")
        assert b.sharding is not None
        locate = b.sharding.locate_repository
        clock = Ticking()  # the waits' own clock: it moves on each look, not with the load
        until = [0.0]

        def moving(repository: str) -> Any:  # no holder until ``until``
            return None if clock() < until[0] else locate(repository)

        def moved(*args: Any, **kwargs: Any) -> Any:
            raise NotOwner(f"the shard of {repo} moved meanwhile")

        monkeypatch.setattr(b.sharding, "locate_repository", moving)
        monkeypatch.setattr(a.runtime, "post_status", moved)
        monkeypatch.setattr(shard_api, "MOVE_WAIT", 1.0)
        monkeypatch.setattr(shard_api, "clock", clock)
        started = clock()
        until[0] = started + 0.8
        body = {"key": "ci", "phase": "success", "force": True}
        answer = httpx.post(url, json=body, headers=JSON, timeout=60)
        took = clock() - started
        assert answer.status_code == 503 and "moved meanwhile" in answer.json()["error"]
        assert 1.0 <= took < 1.5, took  # 1.8 when each wait had MOVE_WAIT of its own
