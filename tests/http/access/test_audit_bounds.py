"""Who first, then what, and an audit no client can flood: a write is refused for its
caller (401, 403) before its body is read; each client leaves a bounded number of entries
a day, the rest counted and logged once; a refusal names whoever the request proved to
be; and the audit lists only what its notes kept."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.git import GitMirror
from promoter.metrics import sample
from promoter.state import audit_notes, audit_quota
from promoter.state.audit import AuditTrail
from promoter.state.audit_entry import AuditEntry, AuditQuery
from promoter.state.audit_quota import AuditQuota, client_of
from promoter.wiring import Daemon
from tests.http.access.test_audit import remote_note
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

HOLD = "/api/v1/strategies/guestbook/hold"
MALFORMED = {"content": b"{not json", "headers": {"content-type": "application/json"}}
DROPPED = "promoter_audit_entries_dropped_total"
WRITES = [
    HOLD,
    "/api/v1/strategies/guestbook/promote",
    "/api/v1/strategies/guestbook/no-such-operation",
    "/api/v1/strategies/nobody/hold",
    "/api/v1/repositories/gitops/commits/abc1234/statuses",
    "/api/v1/refresh",
    "/api/v1/freeze",
    "/api/v1/unfreeze",
]


def daemon(gitops: GitOpsRepo, tmp_path: Path) -> Daemon:
    people = access_yaml(
        tmp_path / "t",
        {"olga": ["role: operator"], "vic": ["role: viewer"], "root": ["role: admin"]},
    )
    return Daemon(local_config(gitops.path, tmp_path / "state", access=people))


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(daemon(gitops, tmp_path).app) as client:
        yield client


def audit(client: TestClient, **query: str) -> list[dict[str, Any]]:
    answer = client.get("/api/v1/audit", params={"limit": "500", **query}, headers=bearer("root"))
    assert answer.status_code == 200, answer.text
    entries: list[dict[str, Any]] = answer.json()["entries"]
    return entries


@pytest.mark.parametrize("path", WRITES)
def test_a_write_without_credentials_is_refused_before_its_body_is_read(
    client: TestClient, path: str
) -> None:
    answer = client.post(path, **MALFORMED)  # type: ignore[arg-type]
    assert answer.status_code == 401, answer.text
    as_viewer = client.post(
        path,
        content=MALFORMED["content"],
        headers={  # type: ignore[arg-type]
            **MALFORMED["headers"],
            **bearer("vic"),  # type: ignore[dict-item]
        },
    )
    assert as_viewer.status_code == 403, as_viewer.text
    assert [(e["who"], e["outcome"], e["status"]) for e in audit(client)] == [
        ("vic", "refused", 403),
        ("local", "refused", 401),
    ]


def test_a_write_with_the_role_somewhere_reads_its_body_and_says_what_is_wrong(
    client: TestClient,
) -> None:
    answer = client.post(
        HOLD, content=b"{not json", headers={"content-type": "application/json", **bearer("olga")}
    )
    assert answer.status_code == 422, answer.text


def test_a_cross_site_refusal_names_the_caller_its_token_proved(client: TestClient) -> None:
    sent = {"origin": "https://evil.example", **bearer("olga")}
    answer = client.post(HOLD, json={"environment": "dev", "reason": "x"}, headers=sent)
    assert answer.status_code == 403, answer.text
    forged = {"origin": "https://evil.example", "authorization": "Bearer not-a-token"}
    assert client.post(HOLD, json={"environment": "dev"}, headers=forged).status_code == 403
    found = [(e["who"], e["via"], e["outcome"]) for e in audit(client)]
    assert found == [("unknown", "unknown", "refused"), ("olga", "token", "refused")]


def test_a_flood_of_anonymous_requests_leaves_a_bounded_audit_counted_and_logged_once(
    gitops: GitOpsRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(audit_quota, "MAX_OTHERS", 20)
    before = sample(DROPPED, {"outcome": "refused", "bound": "client"})
    with TestClient(daemon(gitops, tmp_path).app) as client, caplog.at_level(logging.WARNING):
        answers = {client.post(HOLD, **MALFORMED).status_code for _ in range(60)}  # type: ignore[arg-type]
        assert answers == {401}
        assert (
            client.post(HOLD, json={"environment": "dev"}, headers=bearer("vic")).status_code == 403
        )
        entries = audit(client)
        note = wait_for(
            lambda: (n := remote_note(gitops)) and len(n["entries"]) == 21 and n,
            what="the kept entries pushed",
        )
    assert [e["who"] for e in entries].count("local") == 20
    assert [e["who"] for e in entries].count("vic") == 1  # another client still counts
    assert len(note["entries"]) == 21
    assert sample(DROPPED, {"outcome": "refused", "bound": "client"}) - before == 40
    told = [r for r in caplog.records if r.getMessage() == "audit entries dropped"]
    assert len(told) == 1


def test_a_write_past_the_clients_bound_is_refused_before_it_runs(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_quota, "MAX_WRITES", 1)
    olga = bearer("olga")
    served = daemon(gitops, tmp_path)
    with TestClient(served.app) as client:
        held = client.post(HOLD, json={"environment": "dev", "reason": "r"}, headers=olga)
        assert held.status_code == 200, held.text
        release = "/api/v1/strategies/guestbook/release"
        again = client.post(release, json={"environment": "dev"}, headers=olga)
        assert again.status_code == 429, again.text
        runtime = served.runtime
        mirror = runtime.mirrors.get(runtime.config.repository("gitops"))
        ledger = runtime.ledger.read(mirror, "guestbook", "environment/dev")
        outcomes = [(e["action"], e["outcome"], e["status"]) for e in audit(client)]
    assert [h.reason for h in ledger.holds] == ["held by olga: r"]  # not released
    assert outcomes == [("release", "refused", 429), ("hold", "allowed", 200)]


def entry(outcome: str = "refused", **fields: Any) -> AuditEntry:
    values = {"who": "anonymous", "via": "anonymous", "action": "hold", "repository": "gitops"}
    return AuditEntry.model_validate({"outcome": outcome, **values, **fields})


def test_the_audit_lists_only_the_refusals_its_notes_kept_even_after_a_restart(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_notes, "MAX_REFUSED", 3)
    before = sample(DROPPED, {"outcome": "refused", "bound": "notes"})
    with GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "m") as mirror:
        trail = AuditTrail(tmp_path / "audit", mirror_of=lambda name: mirror)
        for n in range(5):
            trail.record(entry(address=f"192.0.2.{n}"))
        trail.flush_all()
        listed = trail.entries(AuditQuery(), ["gitops"]).entries
        again = AuditTrail(tmp_path / "audit", mirror_of=lambda name: mirror)
        after_restart = again.entries(AuditQuery(), ["gitops"]).entries
    assert len(listed) == 3 and len(after_restart) == 3
    assert {e.id for e in listed} == {e.id for e in after_restart}
    assert sample(DROPPED, {"outcome": "refused", "bound": "notes"}) - before == 2


def test_each_client_is_counted_apart_by_its_proved_name_or_its_address() -> None:
    quota = AuditQuota(writes=1, others=1)
    assert quota.admit(entry(address="192.0.2.1"))
    assert not quota.admit(entry(address="192.0.2.1"))
    assert quota.admit(entry(address="192.0.2.2"))
    assert quota.admit(entry(address="10.0.0.1", forwarded="203.0.113.1"))
    assert not quota.admit(entry(address="10.0.0.1", forwarded="203.0.113.1"))
    assert quota.admit(entry(address="10.0.0.1", forwarded="203.0.113.2"))
    assert quota.admit(entry(who="ada", via="token", address="192.0.2.1"))
    assert quota.admit(entry("started", who="ada", via="token", address="192.0.2.1"))
    assert not quota.admit(entry("started", who="ada", via="token", address="192.0.2.9"))
    assert client_of(entry(address="2001:db8:1:2::7")) == "2001:db8:1:2::/64"
    assert client_of(entry(address="2001:db8:1:2:ffff::1")) == "2001:db8:1:2::/64"
    assert client_of(entry(who="ada", via="proxy")) == "proxy:ada"


def test_the_bounds_start_afresh_each_day_and_clients_past_the_table_share_one() -> None:
    now = [datetime(2026, 11, 1, 23, 59, tzinfo=UTC)]
    quota = AuditQuota(others=1, clients=2, clock=lambda: now[0])
    assert quota.admit(entry(address="192.0.2.1"))
    assert not quota.admit(entry(address="192.0.2.1"))
    assert quota.admit(entry(address="192.0.2.2"))
    assert quota.admit(entry(address="192.0.2.3"))  # the table is full: others
    assert not quota.admit(entry(address="192.0.2.4"))
    now[0] += timedelta(minutes=2)
    assert quota.admit(entry(address="192.0.2.1"))
