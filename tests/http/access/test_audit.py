"""The audit of writes: journaled before the answer, pushed to the repository's
``refs/notes/promoter.audit``, read back by ``GET /api/v1/audit`` (filters and pages) and
the dashboard; nothing of a write that happened is lost to a crash, concurrent writers
keep each other's entries, a flood of refusals is counted rather than kept, and a note
that cannot be parsed is never overwritten."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.git import GitMirror
from promoter.state import audit, audit_notes
from promoter.state.audit import AuditTrail
from promoter.state.audit_entry import AuditEntry, AuditQuery
from promoter.state.audit_notes import AUDIT_REF, AuditNoteUnreadable, key_object
from promoter.wiring import Daemon
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

HOLD = "/api/v1/strategies/guestbook/hold"


def remote_note(gitops: GitOpsRepo, day: datetime | None = None) -> dict[str, Any] | None:
    """The audit note of ``day`` (today) in the repository itself, as the remote has it."""
    _, sha = key_object((day or datetime.now(UTC)).date())
    shown = subprocess.run(
        ["git", "-C", str(gitops.path), "notes", f"--ref={AUDIT_REF}", "show", sha],
        capture_output=True,
        text=True,
        check=False,
    )
    note: dict[str, Any] | None = json.loads(shown.stdout) if shown.returncode == 0 else None
    return note


def entry(outcome: str = "allowed", *, reason: str = "", **fields: Any) -> AuditEntry:
    values = {"who": "ada", "via": "token", "action": "hold", "repository": "gitops", **fields}
    return AuditEntry.model_validate({"outcome": outcome, "detail": {"reason": reason}, **values})


@pytest.fixture
def mirror(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "one") as m:
        yield m


def trail(directory: Path, mirror: GitMirror) -> AuditTrail:
    return AuditTrail(directory, mirror_of=lambda name: mirror if name == "gitops" else None)


def test_a_write_through_the_api_lands_in_the_repositorys_audit_notes(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    people = access_yaml(tmp_path / "t", {"olga": ["role: operator"], "vic": ["role: viewer"]})
    config = local_config(gitops.path, tmp_path / "state", access=people)
    with TestClient(Daemon(config).app) as client:
        held = client.post(
            HOLD, json={"environment": "dev", "reason": "freeze"}, headers=bearer("olga")
        )
        assert held.status_code == 200, held.text
        refused = client.post(
            HOLD, json={"environment": "dev", "reason": "x"}, headers=bearer("vic")
        )
        assert refused.status_code == 403
        note = wait_for(
            lambda: (n := remote_note(gitops)) and len(n["entries"]) == 2 and n,
            what="both entries pushed",
        )
    olga, vic = sorted(note["entries"], key=lambda e: e["who"])
    assert (olga["who"], olga["action"], olga["outcome"], olga["status"]) == (
        "olga",
        "hold",
        "allowed",
        200,
    )
    assert olga["environment"] == "dev" and olga["detail"]["reason"] == "freeze"
    assert olga["address"] and olga["strategy"] == "guestbook"
    assert (vic["outcome"], vic["status"]) == ("refused", 403)


def test_the_api_filters_and_pages_the_audit(gitops: GitOpsRepo, tmp_path: Path) -> None:
    with TestClient(Daemon(local_config(gitops.path, tmp_path / "state")).app) as client:
        for reason in ("one", "two", "three"):
            assert (
                client.post(HOLD, json={"environment": "dev", "reason": reason}).status_code == 200
            )
        assert client.post("/api/v1/refresh", json={}).status_code == 202  # every strategy
        first = client.get("/api/v1/audit", params={"action": "hold", "limit": "2"}).json()
        assert [e["detail"]["reason"] for e in first["entries"]] == ["three", "two"]
        rest = client.get(
            "/api/v1/audit", params={"action": "hold", "limit": "2", "before": first["next"]}
        ).json()
        assert [e["detail"]["reason"] for e in rest["entries"]] == ["one"] and rest["next"] is None
        everything = client.get("/api/v1/audit").json()["entries"]
        assert everything[0]["action"] == "refresh" and everything[0]["strategy"] is None
        assert client.get("/api/v1/audit", params={"outcome": "refused"}).json()["entries"] == []
        assert client.get("/api/v1/audit", params={"since": "yesterday"}).status_code == 422
        page = client.get("/audit", params={"action": "hold"}, headers={"accept": "text/html"})
        assert page.status_code == 200 and page.text.count('class="audit allowed"') == 3


def test_an_entry_journaled_before_a_crash_is_pushed_at_the_next_start(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    first = trail(tmp_path / "audit", mirror)
    first.record(entry(reason="kept"))
    running = entry("started", action="promote")
    first.record(running)
    assert remote_note(gitops) is None  # the process dies before its flush

    again = trail(tmp_path / "audit", mirror)
    again.flush_all()
    note = remote_note(gitops)
    assert note is not None
    assert sorted((e["action"], e["outcome"]) for e in note["entries"]) == [
        ("hold", "allowed"),
        ("promote", "interrupted"),
    ]
    assert next(e for e in note["entries"] if e["action"] == "promote")["id"] == running.id
    third = trail(tmp_path / "audit", mirror)  # pushed: not pushed twice
    third.flush_all()
    assert len(remote_note(gitops)["entries"]) == 2  # type: ignore[index]


def test_a_failed_push_keeps_the_entries_for_the_next_flush(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    audit = trail(tmp_path / "audit", mirror)
    audit.record(entry())
    hooks = gitops.path / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    audit.flush_all()
    assert remote_note(gitops) is None
    hook.unlink()
    audit.flush_all()
    assert len(remote_note(gitops)["entries"]) == 1  # type: ignore[index]


def test_two_writers_keep_each_others_entries(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    with GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "two") as other:
        trails = [trail(tmp_path / "a", mirror), trail(tmp_path / "b", other)]
        for i, t in enumerate(trails):
            for n in range(5):
                t.record(entry(who=f"writer-{i}", reason=str(n)))
        threads = [threading.Thread(target=t.flush_all) for t in trails]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for t in trails:
            t.flush_all()  # one that lost every race tries again
    assert len(remote_note(gitops)["entries"]) == 10  # type: ignore[index]


def test_an_append_after_another_runtime_wrote_in_the_same_mirror_keeps_both(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    """The mirror of a runtime being replaced and its successor's share a directory: an
    append whose mirror read the audit before the other's write is made again on top
    of it (before, git fast-import refused it and the entries waited for the next
    flush)."""
    audit_notes.append(mirror, [entry(who="first")])
    with GitMirror(name="gitops", url=str(gitops.path), root=mirror.path.parent.parent) as other:
        assert other.path == mirror.path
        audit_notes.append(other, [entry(who="other")])
    audit_notes.append(mirror, [entry(who="last")])
    entries = remote_note(gitops)["entries"]  # type: ignore[index]
    assert [e["who"] for e in entries] == ["first", "other", "last"]


def test_refusals_past_the_days_cap_are_counted_not_kept(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_notes, "MAX_REFUSED", 3)
    audit = trail(tmp_path / "audit", mirror)
    for _ in range(5):
        audit.record(entry("refused", who="anonymous"))
    audit.record(entry("allowed"))
    audit.flush_all()
    note = remote_note(gitops)
    assert note is not None
    outcomes = [e["outcome"] for e in note["entries"]]
    assert outcomes.count("refused") == 3 and outcomes.count("allowed") == 1
    assert note["refusedNotKept"] == 2


def test_an_unreadable_note_is_never_overwritten(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    data, sha = key_object(datetime.now(UTC).date())
    blob = (
        subprocess.run(
            ["git", "-C", str(gitops.path), "hash-object", "-w", "--stdin"],
            input=data,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    assert blob == sha
    git(gitops.path, "notes", f"--ref={AUDIT_REF}", "add", "-m", "{not json", sha)
    mirror.fetch()
    with pytest.raises(AuditNoteUnreadable):
        audit_notes.append(mirror, [entry()])
    audit = trail(tmp_path / "audit", mirror)
    audit.record(entry())
    audit.flush_all()
    assert git(gitops.path, "notes", f"--ref={AUDIT_REF}", "show", sha) == "{not json"
    page = audit.entries(AuditQuery(), ["gitops"])  # still read: from the journal
    assert len(page.entries) == 1


def test_a_query_reads_the_days_it_asks_for(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path
) -> None:
    audit = trail(tmp_path / "audit", mirror)
    old = datetime.now(UTC) - timedelta(days=40)
    audit.record(entry(at=old, reason="old"))
    audit.record(entry(reason="new"))
    audit.flush_all()
    fresh = trail(tmp_path / "other", mirror)  # reads the notes alone, no journal
    recent = fresh.entries(AuditQuery(), ["gitops"])
    assert [e.detail["reason"] for e in recent.entries] == ["new"]
    since = fresh.entries(AuditQuery(since=old - timedelta(hours=1)), ["gitops"])
    assert len(since.entries) == 2


def test_a_long_journal_keeps_only_what_the_notes_do_not_hold(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "COMPACT_AFTER", 1)
    monkeypatch.setattr(audit, "KEEP_UNSCOPED", 3)
    trail_ = trail(tmp_path / "audit", mirror)
    for n in range(4):
        trail_.record(entry(reason=f"scoped {n}"))
    for n in range(5):
        trail_.record(entry(repository=None, action="refresh", reason=f"unscoped {n}"))
    trail_.flush_all()
    lines = (tmp_path / "audit" / "journal.jsonl").read_text().splitlines()
    kept = [json.loads(line)["entry"]["detail"]["reason"] for line in lines]
    assert kept == ["unscoped 2", "unscoped 3", "unscoped 4"]
    again = trail(tmp_path / "audit", mirror).entries(AuditQuery(), ["gitops"])
    assert len(again.entries) == 7 and len(remote_note(gitops)["entries"]) == 4  # type: ignore[index]


def test_entries_about_a_repository_another_replica_holds_stay_in_the_journal_only(
    gitops: GitOpsRepo, mirror: GitMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "COMPACT_AFTER", 1)
    monkeypatch.setattr(audit, "KEEP_UNSCOPED", 2)
    held = {"gitops": False}
    asked: list[str] = []

    def mirror_of(name: str) -> GitMirror | None:
        asked.append(name)
        return mirror

    trail_ = AuditTrail(tmp_path / "audit", mirror_of=mirror_of, owns=lambda r: held[r])
    for n in range(3):
        trail_.record(entry(action="refresh", reason=f"theirs {n}"))
    trail_.flush_all()
    assert asked == [] and remote_note(gitops) is None  # no push, no fetch, no warning
    lines = (tmp_path / "audit" / "journal.jsonl").read_text().splitlines()
    kept = [json.loads(line)["entry"]["detail"]["reason"] for line in lines]
    assert kept == ["theirs 1", "theirs 2"]
    shown = trail_.entries(AuditQuery(), [])
    assert [e.detail["reason"] for e in shown.entries] == ["theirs 2", "theirs 1"]

    held["gitops"] = True  # the shard came back: what is written now is pushed
    trail_.record(entry(reason="ours"))
    trail_.flush_all()
    assert [e["detail"]["reason"] for e in remote_note(gitops)["entries"]] == ["ours"]  # type: ignore[index]
