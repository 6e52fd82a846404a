"""The ledger's flushes at their edges, on real repositories: a read while a push is on
the wire sees each change once, a second flush in flight stays visible when the first
one lands, a landed push shows in the local ref even where git does not move it, and a
push the remote refuses undoes its local commit and keeps its changes pending."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.errors import GitError
from promoter.git import GitMirror
from promoter.state.ledger import LEDGER_REF, GitLedger
from tests.support import GitOpsRepo

from .test_ledger import fresh_reader, record, refuse_ledger_pushes


class HeldPushes:
    """Holds the first ``count`` ledger pushes of any mirror until the test lets each go:
    ``entered[n]`` is set when push ``n`` is on the wire, ``go[n]`` lets it through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, count: int) -> None:
        self.entered = [threading.Event() for _ in range(count)]
        self.go = [threading.Event() for _ in range(count)]
        self._calls = 0
        self._lock = threading.Lock()
        real_push = GitMirror.push_commit

        def held(mirror: GitMirror, ref: str, sha: str, *, lease: str | None) -> None:
            with self._lock:
                n, self._calls = self._calls, self._calls + 1
            if n < count:
                self.entered[n].set()
                assert self.go[n].wait(10)
            real_push(mirror, ref, sha, lease=lease)

        monkeypatch.setattr(GitMirror, "push_commit", held)


def flushing(ledger: GitLedger) -> threading.Thread:
    """A timer's flush, in its own thread (``flush_all`` logs failures, raises none)."""
    thread = threading.Thread(target=ledger.flush_all)
    thread.start()
    return thread


def healthy_in(gitops: GitOpsRepo, root: Path) -> tuple[str, ...]:
    """The dry SHAs of dev's healthy records, as a fresh instance reads them from the remote."""
    other, other_ledger = fresh_reader(gitops, root)
    return tuple(r.dry_sha for r in other_ledger.read(other, "s", "dev").healthy)


def local_dry_shas(ledger: GitLedger, mirror: GitMirror) -> tuple[str, ...]:
    return tuple(r.dry_sha for r in ledger.read(mirror, "s", "dev").healthy)


def test_a_read_while_the_push_is_on_the_wire_sees_the_written_change_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notes commit is already in the local ref: the change in flight is not applied
    on top of it a second time."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    pushes = HeldPushes(monkeypatch, 1)
    flusher = flushing(ledger)
    assert pushes.entered[0].wait(10)
    assert local_dry_shas(ledger, mirror) == ("1" * 40,)
    pushes.go[0].set()
    flusher.join(20)
    assert not flusher.is_alive()
    assert local_dry_shas(ledger, mirror) == ("1" * 40,)
    assert healthy_in(gitops, tmp_path / "b") == ("1" * 40,)


def test_when_the_first_of_two_flushes_in_flight_lands_the_second_stays_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git moves the local notes ref to what the first push landed, behind the second
    flush's commit (and so does a fetch): reads still apply the second flush's changes."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    pushes = HeldPushes(monkeypatch, 2)
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)), durable=False)
    first = flushing(ledger)
    assert pushes.entered[0].wait(10)
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("3" * 40)), durable=False)
    second = flushing(ledger)
    assert pushes.entered[1].wait(10)
    pushes.go[0].set()
    first.join(20)
    assert not first.is_alive()
    mirror.fetch()
    assert healthy_in(gitops, tmp_path / "b") == ("1" * 40,)  # the second is not pushed yet
    assert local_dry_shas(ledger, mirror) == ("1" * 40, "3" * 40)
    pushes.go[1].set()
    second.join(20)
    assert not second.is_alive()
    assert local_dry_shas(ledger, mirror) == ("1" * 40, "3" * 40)
    assert healthy_in(gitops, tmp_path / "c") == ("1" * 40, "3" * 40)


def test_a_landed_push_moves_the_local_ref_where_git_does_not_track_the_notes_ref(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror without the notes fetch refspec (one git did not clone: its ``origin``
    was set by hand) is not moved by ``git push``; a fetch during the push moved the
    local ref back to what it was: the ledger moves it to the landed commit itself."""
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    before = git(mirror.path, "rev-parse", LEDGER_REF)
    git(mirror.path, "config", "--unset-all", "remote.origin.fetch")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("2" * 40)), durable=False)
    pushes = HeldPushes(monkeypatch, 1)
    flusher = flushing(ledger)
    assert pushes.entered[0].wait(10)
    mirror.fetch()
    assert git(mirror.path, "rev-parse", LEDGER_REF) == before
    pushes.go[0].set()
    flusher.join(20)
    assert not flusher.is_alive()
    landed = git(gitops.path, "rev-parse", LEDGER_REF)
    assert landed != before
    assert git(mirror.path, "rev-parse", LEDGER_REF) == landed
    assert local_dry_shas(ledger, mirror) == ("1" * 40, "2" * 40)


def test_a_refused_push_undoes_its_local_commit_and_keeps_the_change_pending(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    mirror, ledger = fresh_reader(gitops, tmp_path / "a")
    ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("1" * 40)))
    before = git(mirror.path, "rev-parse", LEDGER_REF)
    hook = refuse_ledger_pushes(gitops)
    with pytest.raises(GitError, match="notes are protected"):
        ledger.update(mirror, "s", "dev", lambda led: led.with_healthy(record("2" * 40)))
    assert git(mirror.path, "rev-parse", LEDGER_REF) == before
    assert git(gitops.path, "rev-parse", LEDGER_REF) == before
    assert local_dry_shas(ledger, mirror) == ("1" * 40, "2" * 40)  # pending, applied once
    hook.unlink()
    ledger.flush_all()
    assert healthy_in(gitops, tmp_path / "b") == ("1" * 40, "2" * 40)
    assert local_dry_shas(ledger, mirror) == ("1" * 40, "2" * 40)
