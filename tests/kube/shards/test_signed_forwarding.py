"""Calls between replicas are signed over their method, path, body, identity headers, the
replica they are for and a timestamp with a nonce: a captured forward sent again, sent
late, sent to another replica, or with an identity header changed is refused, and a
header added on the way is not believed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from promoter.config import Config
from promoter.kube.shards.forwarding.signing import SIGNATURE, SKEW, Verifier, sign
from tests.kube.cluster import NS, PEER_TOKEN, fake_cluster, wait_until
from tests.kube.shard_helpers import owner_of
from tests.kube.shards.test_shard_trust import HOLD, audited, replicas

ADDRESS = "http://10.0.0.5:8080"
HEADERS = {"authorization": "Bearer vic-token", "host": "promoter.example", "x-for": "10.1.1.1"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def verifier(clock: Clock, **kwargs: Any) -> Verifier:
    return Verifier(PEER_TOKEN, address=ADDRESS, clock=clock, **kwargs)


def signed(clock: Clock, *, at: float | None = None, to: str = ADDRESS) -> str:
    when = clock.now if at is None else at
    return sign(PEER_TOKEN, b"{}", when, what="POST /x", to=to, headers=HEADERS)


def test_a_signature_holds_once_for_its_call_its_headers_and_its_replica_while_fresh() -> None:
    clock = Clock()
    check = verifier(clock)
    header = signed(clock)
    assert check.verify(header, b"{}", what="POST /x", headers=HEADERS) == sorted(HEADERS)
    assert check.verify(header, b"{}", what="POST /x", headers=HEADERS) is None, "replayed"
    changed = {**HEADERS, "authorization": "Bearer ops-token"}
    assert check.verify(signed(clock), b"{}", what="POST /x", headers=changed) is None
    assert check.verify(signed(clock), b"[]", what="POST /x", headers=HEADERS) is None
    assert check.verify(signed(clock), b"{}", what="POST /y", headers=HEADERS) is None
    for_another = signed(clock, to="http://10.0.0.6:8080")
    assert check.verify(for_another, b"{}", what="POST /x", headers=HEADERS) is None
    late, early = signed(clock, at=clock.now - SKEW - 1), signed(clock, at=clock.now + SKEW + 1)
    assert check.verify(late, b"{}", what="POST /x", headers=HEADERS) is None
    assert check.verify(early, b"{}", what="POST /x", headers=HEADERS) is None
    in_time = signed(clock, at=clock.now - SKEW + 1)
    assert check.verify(in_time, b"{}", what="POST /x", headers=HEADERS) is not None
    assert Verifier(None, address=ADDRESS).verify(signed(clock), b"{}", what="POST /x") is None
    assert check.refused == 7


def test_nonces_are_forgotten_once_stale_and_past_the_bound_the_oldest_calls_are_refused() -> None:
    clock = Clock()
    check = verifier(clock, remembered=3)
    old = [signed(clock, at=clock.now - 10) for _ in range(2)]
    new = [signed(clock) for _ in range(3)]
    for header in old + new:
        assert check.verify(header, b"{}", what="POST /x", headers=HEADERS) is not None
    for header in old + new:  # forgotten or not, each is refused a second time
        assert check.verify(header, b"{}", what="POST /x", headers=HEADERS) is None
    late = signed(clock, at=clock.now - 10)  # as old as a forgotten one: refused
    assert check.verify(late, b"{}", what="POST /x", headers=HEADERS) is None
    clock.now += SKEW + 1
    assert check.verify(signed(clock), b"{}", what="POST /x", headers=HEADERS) is not None
    assert len(check._seen) == 1, "the stale nonces are forgotten"


@pytest.fixture
def people() -> Iterator[Config]:
    """Callers named by an authenticating proxy on 127.0.0.1: vic views, ops operates."""
    yield Config.model_validate(
        {
            "access": {
                "proxy": {"userHeader": "X-Forwarded-User", "trustedAddresses": ["127.0.0.1/32"]},
                "grants": [
                    {"users": ["vic"], "role": "viewer"},
                    {"users": ["ops"], "role": "operator"},
                ],
            }
        }
    )


def test_a_captured_forward_replayed_or_with_another_identity_is_refused_by_the_owner(
    tmp_path: Path, people: Config
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = replicas(cluster, tmp_path, base=people)
        strategy = next(f"{NS}.app-{n}" for n in range(4) if owner_of([a, b], f"app-{n}") is a)
        captured: list[httpx.Request] = []

        async def capture(request: httpx.Request) -> None:
            captured.append(request)

        routes = cluster.servers["b"].server.config.app.routes
        routes._client.event_hooks["request"].append(capture)
        url = f"{cluster.addresses['b']}/api/v1/strategies/{strategy}/hold"
        for user, status in (("vic", 403), ("ops", 200)):  # through the proxy, to b
            done = httpx.post(url, json=HOLD, headers={"x-forwarded-user": user})
            assert done.status_code == status, done.text
        assert [e.outcome for e in audited(a, strategy)] == ["allowed", "refused"]
        wait_until(lambda: len(captured) == 2, what="b to pass both on to a")
        refused, allowed = captured
        assert SIGNATURE in refused.headers and refused.headers["x-forwarded-user"] == "vic"

        def again(forward: httpx.Request, **changed: str) -> httpx.Response:
            headers = {**dict(forward.headers), **changed}
            return httpx.post(str(forward.url), content=forward.content, headers=headers)

        assert again(allowed).status_code == 403, "the captured forward replayed"
        escalated = again(refused, **{"x-forwarded-user": "ops"})
        assert escalated.status_code == 403, "another identity believed"
        assert [e.outcome for e in audited(a, strategy)] == ["allowed", "refused"]

        # signed with the secret, an identity header added on the way is not believed
        forward = refused
        headers = {k: v for k, v in forward.headers.items() if k not in ("x-forwarded-user",)}
        headers.pop(SIGNATURE)
        what = f"POST {forward.url.raw_path.decode()} for {headers['x-promoter-passed-for']}"
        to = cluster.addresses["a"]
        headers[SIGNATURE] = sign(PEER_TOKEN, forward.content, what=what, to=to, headers=headers)
        added = httpx.post(
            str(forward.url),
            content=forward.content,
            headers={**headers, "x-forwarded-user": "ops"},
        )
        assert added.status_code in (401, 403), "an unsigned identity header believed"
        newest, *before = audited(a, strategy)  # newest first
        assert (newest.outcome, [e.outcome for e in before]) == ("refused", ["allowed", "refused"])
        assert newest.who != "ops"
