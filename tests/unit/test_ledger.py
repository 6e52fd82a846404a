"""The ledger in git notes: batched writes, read-your-writes, and no loss when the
mirror is deleted under a running daemon."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from promoter.engine import EnvLedger, HealthyRecord, Hold
from promoter.errors import GitError
from promoter.git import GitMirror
from promoter.state.ledger import LEDGER_REF, GitLedger, LedgerUnreadable, key_object
from tests.gitrepo import git
from tests.support import GitOpsRepo

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(sha: str) -> HealthyRecord:
    return HealthyRecord(dry_sha=sha, hydrated_sha=sha, healthy_since=NOW)


def hold(sha: str) -> Hold:
    return Hold(dry_sha=sha, reason="bad", since=NOW, source="manual")


def fresh_reader(gitops: GitOpsRepo, root: Path) -> tuple[GitMirror, GitLedger]:
    mirror = GitMirror(name="gitops", url=str(gitops.path), root=root)
    mirror.refresh()
    return mirror, GitLedger()


def note_reads(mirror: GitMirror, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the ledger notes ``mirror`` reads from git from now on."""
    reads: list[str] = []
    real = mirror.note_object

    def counted(ref: str, sha: str) -> tuple[str, bytes] | None:
        reads.append(sha)
        return real(ref, sha)

    monkeypatch.setattr(mirror, "note_object", counted)
    return reads


def refuse_ledger_pushes(gitops: GitOpsRepo) -> Path:
    """The remote's pre-receive hook declines every push (a protected ref, a full disk)."""
    hook = gitops.path / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'notes are protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    return hook


def test_a_failed_push_keeps_the_pending_changes_until_a_later_flush_lands_them(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    hook = refuse_ledger_pushes(gitops)
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    with pytest.raises(GitError, match="notes are protected"):
        ledger.update(mirror, "s", "staging", lambda led: led.with_hold(hold("2" * 40)))
    ledger.flush_all()  # refused again: logged, and kept
    assert ledger.read(mirror, "s", "dev").healthy == (record("1" * 40),)
    assert [h.dry_sha for h in ledger.read(mirror, "s", "staging").holds] == ["2" * 40]
    hook.unlink()
    ledger.flush_all()
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev").healthy == (record("1" * 40),)
    assert [h.dry_sha for h in other_ledger.read(other, "s", "staging").holds] == ["2" * 40]
    assert ledger.read(mirror, "s", "dev").healthy == (record("1" * 40),)  # applied once


def test_changes_made_while_a_push_fails_land_after_the_failed_ones_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    hook = refuse_ledger_pushes(gitops)
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    pushing, release = threading.Event(), threading.Event()
    real_push = GitMirror.push_commit

    def slow_network(self: GitMirror, ref: str, sha: str, *, lease: str | None) -> None:
        pushing.set()
        assert release.wait(10)
        real_push(self, ref, sha, lease=lease)

    monkeypatch.setattr(GitMirror, "push_commit", slow_network)
    flusher = threading.Thread(target=ledger.flush_all)
    flusher.start()
    assert pushing.wait(10)
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("3" * 40)), durable=False)
    release.set()
    flusher.join(10)
    assert not flusher.is_alive()
    monkeypatch.setattr(GitMirror, "push_commit", real_push)
    hook.unlink()
    ledger.flush_all()
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev").healthy == (record("1" * 40), record("3" * 40))


def test_healthy_records_are_read_at_once_and_pushed_by_the_next_flush(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    assert ledger.read(mirror, "s", "dev").last_healthy == record("1" * 40)
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev") == EnvLedger()
    ledger.flush_all()
    other.refresh()
    assert other_ledger.read(other, "s", "dev").last_healthy == record("1" * 40)


def test_a_deleted_mirror_is_cloned_again_and_no_other_note_is_lost(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "staging", lambda led: led.with_hold(hold("2" * 40)))
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    shutil.rmtree(mirror.path)
    ledger.flush_all()
    ledger.update(mirror, "s", "prod", lambda led: led.with_hold(hold("3" * 40)))
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert [h.dry_sha for h in other_ledger.read(other, "s", "staging").holds] == ["2" * 40]
    assert [h.dry_sha for h in other_ledger.read(other, "s", "prod").holds] == ["3" * 40]
    assert other_ledger.read(other, "s", "dev").last_healthy == record("1" * 40)


def test_a_flush_pushes_without_holding_the_mirror_and_reads_see_it_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    pushing, release = threading.Event(), threading.Event()
    real_push = GitMirror.push_commit

    def slow_network(self: GitMirror, ref: str, sha: str, *, lease: str | None) -> None:
        pushing.set()
        assert release.wait(10)
        real_push(self, ref, sha, lease=lease)

    monkeypatch.setattr(GitMirror, "push_commit", slow_network)
    flusher = threading.Thread(target=ledger.flush_all)
    flusher.start()
    assert pushing.wait(10)
    # While the push is on the wire: the mirror is free, even a fetch that moves the
    # local notes ref back, and every read still sees the record exactly once.
    assert mirror.lock.acquire(timeout=1)
    mirror.lock.release()
    mirror.fetch()
    assert ledger.read(mirror, "s", "dev").healthy == (record("1" * 40),)
    release.set()
    flusher.join(10)
    assert ledger.read(mirror, "s", "dev").healthy == (record("1" * 40),)
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev").healthy == (record("1" * 40),)


def test_a_flush_racing_another_writer_keeps_both(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    other_ledger.update(other, "s", "staging", lambda led: led.with_hold(hold("2" * 40)))
    ledger.flush_all()  # rejected once (the ref moved), then written on top of the hold
    third, third_ledger = fresh_reader(gitops, tmp_path / "c")
    assert third_ledger.read(third, "s", "dev").healthy == (record("1" * 40),)
    assert [h.dry_sha for h in third_ledger.read(third, "s", "staging").holds] == ["2" * 40]


def test_a_durable_write_during_a_timer_flush_lands_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git moves the local notes ref after a push (the fetch refspec maps it): a notes
    commit written meanwhile must not be built on a tip read before that."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    pushing, release = threading.Event(), threading.Event()
    real_push = GitMirror._push
    first = [True]

    def slow_first_push(self: GitMirror, refspecs: list[str], leases: Any) -> None:
        if first[0]:
            first[0] = False
            pushing.set()
            assert release.wait(10)
        real_push(self, refspecs, leases)

    monkeypatch.setattr(GitMirror, "_push", slow_first_push)
    errors: list[BaseException] = []

    def run(work: Callable[[], object]) -> threading.Thread:
        def guarded() -> None:
            try:
                work()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=guarded)
        thread.start()
        return thread

    timer = run(ledger.flush_all)
    assert pushing.wait(10)
    durable = run(
        lambda: ledger.update(mirror, "s", "prod", lambda led: led.with_hold(hold("3" * 40)))
    )
    time.sleep(0.2)
    release.set()
    timer.join(20)
    durable.join(20)
    assert errors == []
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert other_ledger.read(other, "s", "dev").healthy == (record("1" * 40),)
    assert [h.dry_sha for h in other_ledger.read(other, "s", "prod").holds] == ["3" * 40]


def test_the_mirror_keeps_the_key_objects_so_pruning_notes_there_keeps_the_ledger(
    tmp_path: Path,
) -> None:
    """The notes hang on synthetic blobs (``key_object``), stored in the mirror with them:
    ``git notes prune`` drops notes whose object is missing."""
    from promoter.cli.sandbox import git
    from promoter.state.ledger import LEDGER_REF

    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_hold(hold("2" * 40)))
    assert git(gitops.path, "log", "-1", "--format=%s", LEDGER_REF) == "promoter ledger"
    tip = git(mirror.path, "rev-parse", LEDGER_REF)
    git(mirror.path, "notes", f"--ref={LEDGER_REF}", "prune")
    assert git(mirror.path, "rev-parse", LEDGER_REF) == tip  # nothing to prune
    same = GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "a")
    assert [h.dry_sha for h in GitLedger().read(same, "s", "dev").holds] == ["2" * 40]


def test_changes_that_change_nothing_write_and_push_nothing(tmp_path: Path) -> None:
    from promoter.cli.sandbox import git
    from promoter.state.ledger import LEDGER_REF

    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_hold(hold("2" * 40)))
    before = git(gitops.path, "rev-parse", LEDGER_REF)
    same = ledger.update_many(mirror, "s", {"dev": lambda led: led, "staging": lambda led: led})
    assert [h.dry_sha for h in same["dev"].holds] == ["2" * 40]
    assert git(gitops.path, "rev-parse", LEDGER_REF) == before


def test_a_note_read_before_another_writer_moved_the_ledger_is_read_anew_after_a_fetch(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    other, other_ledger = fresh_reader(gitops, tmp_path / "b")
    assert ledger.read(mirror, "s", "dev") == EnvLedger()
    other_ledger.update(other, "s", "dev", lambda led: led.with_hold(hold("2" * 40)))
    assert ledger.read(mirror, "s", "dev") == EnvLedger()  # not fetched yet
    mirror.refresh()
    assert [h.dry_sha for h in ledger.read(mirror, "s", "dev").holds] == ["2" * 40]
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    found = ledger.read(mirror, "s", "dev")
    assert found.last_healthy == record("1" * 40) and len(found.holds) == 1


def test_a_note_that_cannot_be_parsed_is_refused_with_its_key_and_what_to_do(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    data, sha = key_object("s", "dev")
    assert git(gitops.path, "hash-object", "-w", "--stdin", stdin=data.decode()) == sha
    git(gitops.path, "notes", f"--ref={LEDGER_REF}", "add", "-m", "{not json", sha)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    with pytest.raises(LedgerUnreadable) as raised:
        ledger.read(mirror, "s", "dev")
    assert str(raised.value) == (
        f"the ledger note {sha[:12]} under {LEDGER_REF} cannot be parsed; it is kept"
        " as it is: repair or remove it with git notes"
    )
    with pytest.raises(LedgerUnreadable):  # a refusal is not remembered as a value
        ledger.read(mirror, "s", "dev")


def test_one_note_read_again_at_the_same_tip_is_read_from_git_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_hold(hold("2" * 40)))
    reads = note_reads(mirror, monkeypatch)
    for _ in range(3):
        assert len(ledger.read(mirror, "s", "dev").holds) == 1
        assert ledger.read(mirror, "*", "*") == EnvLedger()
    assert sorted(reads) == sorted([key_object("s", "dev")[1], key_object("*", "*")[1]])
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    reads.clear()
    assert ledger.read(mirror, "s", "dev").last_healthy == record("1" * 40)
    assert ledger.read(mirror, "s", "dev").last_healthy == record("1" * 40)
    assert len(reads) == 1  # the tip moved: read anew, once


def test_a_pass_over_a_large_repositorys_notes_reads_each_from_git_once_per_tip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm pass reconciles every strategy of a repository, each reading its
    environments' notes and the freeze scopes': at 200 strategies x 4 environments a
    bound of 512 notes kept at the tip made every pass read each of them from git again.
    Notes that do not exist are one shared empty ledger, not one object each."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s0", "dev", lambda led: led.with_hold(hold("2" * 40)))
    keys = [(f"s{i}", env) for i in range(300) for env in ("dev", "prod", "*")]
    reads = note_reads(mirror, monkeypatch)
    first = [ledger.read(mirror, s, e) for s, e in keys]
    assert len(reads) == len(keys) == 900
    assert len(first[0].holds) == 1
    assert first[1] is first[2] is first[-1] == EnvLedger()  # no note: one shared value
    reads.clear()
    again = [ledger.read(mirror, s, e) for s, e in keys]
    assert reads == []  # the tip did not move: nothing read from git again
    assert again == first


def test_a_ledger_write_after_another_runtime_wrote_in_the_same_mirror_keeps_both_changes(
    tmp_path: Path,
) -> None:
    """A configuration change builds a new runtime whose mirrors are the old one's
    directories, while the old runtime flushes its ledger: the write whose mirror read
    the ledger before the other's write is made again on top of it (before, the hold
    failed with git fast-import's refusal, answered 502)."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    other, other_ledger = fresh_reader(gitops, tmp_path / "a")
    assert other.path == mirror.path
    other_ledger.update(other, "s", "dev", lambda led: led.with_hold(hold("2" * 40)))
    ledger.update(mirror, "s", "dev", lambda led: led.with_hold(hold("3" * 40)))
    for reader, its_ledger in ((mirror, ledger), fresh_reader(gitops, tmp_path / "c")):
        found = its_ledger.read(reader, "s", "dev")
        assert found.last_healthy == record("1" * 40)
        assert [h.dry_sha for h in found.holds] == ["2" * 40, "3" * 40]
