"""The API stand-in's fault switch and journal, as the sharding benchmark drives them:
broken answers 500 to everything but the switch itself, and the journal tells which
Lease and Event writes arrived, by whom, in order."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.kube.fake_api import FakeKube
from tests.kube.fake_api_faults import Faults

LEASES = "/apis/coordination.k8s.io/v1/namespaces/team/leases"
ROLE = "promoter.argoproj.io/lease-role"


def lease(holder: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "promoter-shard-001", "labels": {ROLE: "shard"}},
        "spec": {
            "holderIdentity": holder,
            "renewTime": "2026-11-29T06:00:00.000000Z",
            "leaseDurationSeconds": 5,
        },
    }


def test_a_broken_stand_in_fails_every_request_until_the_fault_is_lifted() -> None:
    client = TestClient(Faults(FakeKube()).app)
    assert client.post(LEASES, json=lease("a")).status_code == 201
    assert client.post("/debug/fault", json={"fault": "broken"}).status_code == 200
    assert client.get(LEASES).status_code == 500
    assert client.post("/debug/fault", json={"fault": ""}).status_code == 200
    assert client.get(LEASES).status_code == 200


def test_the_journal_tells_each_lease_and_event_write_in_order() -> None:
    client = TestClient(Faults(FakeKube()).app)
    written = client.post(LEASES, json=lease("a")).json()
    written["spec"]["holderIdentity"] = "b"
    client.put(f"{LEASES}/promoter-shard-001", json=written)
    event = {
        "metadata": {"generateName": "app-1."},
        "involvedObject": {"name": "app-1"},
        "reason": "PromotionOpened",
        "reportingInstance": "b",
    }
    client.post("/api/v1/namespaces/team/events", json=event)
    entries = client.get("/debug/journal").json()
    assert [(e["kind"], e.get("holder") or e.get("instance")) for e in entries] == [
        ("lease", "a"),
        ("lease", "b"),
        ("event", "b"),
    ]
    assert entries[0]["role"] == "shard" and entries[0]["duration"] == 5
    later = client.get("/debug/journal", params={"since": entries[2]["at"] + 1}).json()
    assert later == []
