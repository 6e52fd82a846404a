"""A request passed from the replica it reached to the one that works on the strategy
meets the same checks as if the caller had sent it there: the browser's (a page of
another origin may not write, a write is JSON), who calls and the role it needs, the
audit (with the caller's address); nobody but a replica may claim to pass one on. The
shard table and the strategy list answer only the callers who may read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from promoter.config import Config
from promoter.kube.controller import Controller
from promoter.kube.shards.forwarding.passing import FOR, PASSED
from promoter.kube.shards.forwarding.signing import SIGNATURE, sign
from promoter.state.audit_entry import AuditEntry, AuditQuery
from tests.kube.cluster import NS, PEER_TOKEN, Cluster, fake_cluster, wait_until
from tests.kube.shard_helpers import fleet, owner_of, settled

HOLD = {"environment": "environment/staging", "reason": "a test"}
JSON = {"content-type": "application/json"}


def replicas(cluster: Cluster, root: Path, base: Config | None = None) -> tuple[Controller, ...]:
    fleet(cluster, root, 4)
    a, b = cluster.sharded("a", base=base), cluster.sharded("b", base=base)
    wait_until(lambda: settled(cluster, [a, b]), what="a and b to settle")
    return a, b


def of(owner: Controller, others: tuple[Controller, ...]) -> str:
    """A strategy ``owner`` works on."""
    for n in range(4):
        if owner_of(list(others), f"app-{n}") is owner:
            return f"{NS}.app-{n}"
    raise AssertionError(f"{owner.settings.identity} works on no strategy")


def audited(owner: Controller, strategy: str) -> list[AuditEntry]:
    repo = owner.runtime.config.strategy(strategy)
    assert repo is not None
    query = AuditQuery(strategy=strategy, action="hold", limit=50)
    return owner.runtime.audit.entries(query, [repo.repository]).entries


def test_a_write_from_another_sites_page_or_a_rebound_name_reaching_any_replica_is_refused(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = replicas(cluster, tmp_path)
        strategy = of(a, (a, b))
        url = f"{cluster.addresses['b']}/api/v1/strategies/{strategy}/hold"
        host = cluster.addresses["b"].removeprefix("http://")
        refused = {
            "another origin": ({**JSON, "origin": "http://evil.example"}, 403),
            "a cross-site fetch": ({**JSON, "sec-fetch-site": "cross-site"}, 403),
            "a same-site fetch": ({**JSON, "sec-fetch-site": "same-site"}, 403),
            "a form": ({"content-type": "text/plain", "origin": f"http://{host}"}, 415),
        }
        for why, (headers, status) in refused.items():
            answer = httpx.post(url, content=json.dumps(HOLD), headers=headers)
            assert answer.status_code == status, (why, answer.text)
            assert answer.headers["content-security-policy"].startswith("default-src 'none'")
        rebound = {**JSON, "host": "rebind.example"}
        assert httpx.post(url, content=json.dumps(HOLD), headers=rebound).status_code == 421
        for path in ("/api/v1/shards", "/api/v1/strategies", f"/dashboard/{strategy}"):
            answer = httpx.get(cluster.addresses["b"] + path, headers={"host": "rebind.example"})
            assert answer.status_code == 421, path
        entries = audited(a, strategy)  # refused before anything started
        assert [e.outcome for e in entries] == ["refused"] * len(refused)
        assert {e.address for e in entries} == {"127.0.0.1"}
        assert audited(b, strategy) == []

        same = httpx.post(url, json=HOLD, headers={"origin": f"http://{host}"})
        assert same.status_code == 200, same.text
        assert same.json()["held"]
        assert audited(a, strategy)[0].outcome == "allowed"
        shown = httpx.get(f"{cluster.addresses['b']}/api/v1/audit?strategy={strategy}").json()
        assert shown["entries"][0]["outcome"] == "allowed"


def test_nobody_but_a_replica_may_pass_a_request_on_or_say_whom_it_comes_from(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = replicas(cluster, tmp_path)
        strategy = of(a, (a, b))
        path = f"/api/v1/strategies/{strategy}/hold"
        body = json.dumps(HOLD).encode()
        to_a = cluster.addresses["a"]

        def signed(
            client: str, token: str = PEER_TOKEN, what: str = "", to: str = to_a
        ) -> dict[str, str]:
            what = what or f"POST {path} for {client}"
            host = to_a.removeprefix("http://")
            headers = {**JSON, "host": host, PASSED: "b", FOR: client}
            return {**headers, SIGNATURE: sign(token, body, what=what, to=to, headers=headers)}

        forged: dict[str, dict[str, str]] = {
            "unsigned": {PASSED: "b", FOR: "10.0.0.7"},
            "another secret": signed("10.0.0.7", token="guessed"),
            "another address": {**signed("127.0.0.1"), FOR: "10.0.0.7"},
            "another path": signed("10.0.0.7", what="POST /api/v1/refresh for 10.0.0.7"),
            "signed for another replica": signed("10.0.0.7", to=cluster.addresses["b"]),
        }
        for why, headers in forged.items():
            answer = httpx.post(to_a + path, content=body, headers={**JSON, **headers})
            assert answer.status_code == 403, (why, answer.text)
        assert audited(a, strategy) == []

        good = signed("10.0.0.7")
        answer = httpx.post(to_a + path, content=body, headers=good)
        assert answer.status_code == 200, answer.text
        assert [(e.outcome, e.address) for e in audited(a, strategy)] == [("allowed", "10.0.0.7")]
        again = httpx.post(to_a + path, content=body, headers=good)  # captured, sent again
        assert again.status_code == 403, again.text
        assert len(audited(a, strategy)) == 1


@pytest.fixture
def people(tmp_path: Path) -> Iterator[Config]:
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    for name in ("vic", "ops"):
        (tokens / name).write_text(f"{name}-token-0123456789\n")
    yield Config.model_validate(
        {
            "access": {
                "tokens": [
                    {"name": n, "secret": {"fromFile": str(tokens / n)}} for n in ("vic", "ops")
                ],
                "grants": [
                    {"users": ["vic"], "role": "viewer", "strategies": [f"{NS}.app-0"]},
                    {"users": ["ops"], "role": "operator"},
                ],
            }
        }
    )


def bearer(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {name}-token-0123456789"}


def test_with_tokens_the_shards_and_strategies_show_only_what_the_caller_may_read(
    tmp_path: Path, people: Config
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = replicas(cluster, tmp_path, base=people)
        for address in cluster.addresses.values():
            for path in ("/api/v1/shards", "/api/v1/strategies", "/api/v1/strategies?scope=local"):
                assert httpx.get(address + path).status_code == 401, path
            shards = httpx.get(address + "/api/v1/shards", headers=bearer("vic"))
            assert shards.status_code == 200
            listed = httpx.get(address + "/api/v1/strategies", headers=bearer("vic")).json()
            assert [s["name"] for s in listed["strategies"]] == [f"{NS}.app-0"]
            everything: Any = httpx.get(address + "/api/v1/strategies", headers=bearer("ops"))
            names = {s["name"]: s for s in everything.json()["strategies"]}
            assert len(names) == 4
            assert all(s["environments"] for s in names.values()), "an owner did not answer"

        strategy = of(a, (a, b))
        url = f"{cluster.addresses['b']}/api/v1/strategies/{strategy}/hold"
        assert httpx.post(url, json=HOLD).status_code == 401
        assert httpx.post(url, json=HOLD, headers=bearer("vic")).status_code in (401, 403)
        done = httpx.post(url, json=HOLD, headers=bearer("ops"))
        assert done.status_code == 200, done.text
        entries = audited(a, strategy)
        assert (entries[0].who, entries[0].outcome) == ("ops", "allowed")
        assert {e.outcome for e in entries[1:]} == {"refused"}


def frozen(replicas: tuple[Controller, ...], strategy: str | None) -> dict[str, str | None]:
    """Each repository's freeze of ``strategy`` (None: of everything), as the replica
    holding it reads its ledger."""
    found: dict[str, str | None] = {}
    for replica in replicas:
        freezes, config = replica.runtime.freezes, replica.runtime.config
        for repo in config.repositories:
            named = config.strategy(strategy) if strategy else None
            if not replica.runtime.owns(repo.name) or (named and named.repository != repo.name):
                continue
            note = freezes.ledger.read(freezes.mirror(repo), strategy or "*", "*")
            found[repo.name] = note.freeze.reason if note.freeze else None
    return found


def test_a_freeze_sent_to_any_replica_is_written_by_those_whose_repositories_it_covers(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = replicas(cluster, tmp_path)
        strategy = of(a, (a, b))
        url = cluster.addresses["b"] + "/api/v1/"
        one = httpx.post(url + "freeze", json={"strategy": strategy, "reason": "audit week"})
        assert one.status_code == 200, one.text
        assert one.json()["strategies"] == [strategy]
        assert list(frozen((a, b), strategy).values()) == ["audit week"]

        every = httpx.post(url + "freeze", json={"reason": "incident 42"})
        assert every.status_code == 200, every.text
        assert every.json()["strategies"] == [f"{NS}.app-{n}" for n in range(4)]
        assert set(frozen((a, b), None).values()) == {"incident 42"}
        assert len(frozen((a, b), None)) == 4

        lifted = httpx.post(url + "unfreeze", json={})
        assert lifted.status_code == 200, lifted.text
        assert set(frozen((a, b), None).values()) == {None}
        again = httpx.post(url + "unfreeze", json={})
        assert again.status_code == 404, again.text
