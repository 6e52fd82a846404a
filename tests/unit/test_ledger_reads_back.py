"""The ledger reads back what it records without copying it again: the same ledger for
the same tip and changes, the flush writing that one, and the note read at the new tip
not parsed again; notes hold the fields that differ from their defaults."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from promoter.engine import EnvLedger, HealthyRecord
from promoter.git import GitMirror
from promoter.state.ledger import LEDGER_REF, GitLedger, key_object
from tests.gitrepo import git
from tests.support import GitOpsRepo

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(sha: str) -> HealthyRecord:
    return HealthyRecord(dry_sha=sha, hydrated_sha=sha, healthy_since=NOW)


OPENED: list[GitMirror] = []


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    """The mirrors a test opened are closed after it (their ``cat-file`` processes end)."""
    yield
    while OPENED:
        OPENED.pop().close()


def reader(gitops: GitOpsRepo, root: Path) -> tuple[GitMirror, GitLedger]:
    mirror = GitMirror(name="gitops", url=str(gitops.path), root=root)
    OPENED.append(mirror)
    mirror.refresh()
    return mirror, GitLedger()


def counted(calls: list[str], name: str, sha: str) -> Callable[[EnvLedger], EnvLedger]:
    def change(led: EnvLedger) -> EnvLedger:
        calls.append(name)
        return led.with_healthy(record(sha))

    return change


def test_a_record_read_back_is_the_ledger_the_flush_writes_and_reads_at_the_new_tip(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = reader(gitops, tmp_path / "a")
    made = ledger.update(
        mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False
    )
    read = ledger.read(mirror, "s", "dev")
    assert read is made  # what the update gave (the view keeps it) is what the cache holds
    assert ledger.read(mirror, "s", "dev") is read
    ledger.flush_all()
    assert mirror.branch_sha(LEDGER_REF) is not None
    assert ledger.read(mirror, "s", "dev") is read  # the note at the new tip: not parsed
    other, other_ledger = reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev") == read


def test_a_change_made_after_a_read_is_applied_alone_to_what_was_read(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = reader(gitops, tmp_path / "a")
    calls: list[str] = []
    ledger.update(mirror, "s", "dev", counted(calls, "first", "1" * 40), durable=False)
    ledger.read(mirror, "s", "dev")
    ledger.read(mirror, "s", "dev")
    ledger.update(mirror, "s", "dev", counted(calls, "second", "2" * 40), durable=False)
    both = ledger.read(mirror, "s", "dev")
    assert [r.dry_sha for r in both.healthy] == ["1" * 40, "2" * 40]
    assert calls == ["first", "second"]  # each applied once, by its update
    ledger.flush_all()
    assert calls == ["first", "second"]  # the flush writes what was read
    other, other_ledger = reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev") == both


def test_a_note_holds_the_fields_that_differ_from_their_defaults_and_a_whole_one_reads_alike(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    _, key = key_object("s", "dev")
    text = git(gitops.path, "notes", f"--ref={LEDGER_REF}", "show", key)
    assert list(json.loads(text)) == ["healthy"]
    whole = EnvLedger(healthy=(record("1" * 40),))
    mirror.write_note(LEDGER_REF, key_object("s", "staging")[1], whole.model_dump_json())
    assert ledger.read(mirror, "s", "staging") == whole == ledger.read(mirror, "s", "dev")
