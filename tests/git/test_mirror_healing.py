"""A mirror lost under the daemon (deleted, its files cut short, its reader stopped) is
healed by its next use, never under the notes lock: a notes write that meets the loss
fails without writing, and no lock is ever waited for by the thread that holds it."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.errors import GitError
from promoter.git import GitMirror, MirrorLost, NotesMoved
from promoter.git.process import runner
from promoter.watchdog import LockReentered
from tests.gitrepo import GitSandbox, git

LEDGER = "refs/notes/promoter.ledger"


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    return sandbox


@pytest.fixture
def mirror(tmp_path: Path, remote: GitSandbox) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as m:
        m.refresh()
        yield m


def pushed_note(mirror: GitMirror, sha: str, text: str) -> str:
    """A ledger note written and pushed; the new tip."""
    before = mirror.refs().get(LEDGER)
    tip = mirror.write_notes(LEDGER, {sha: text}, message="ledger")
    mirror.push_commit(LEDGER, tip, lease=before)
    return tip


def remote_ref(remote: GitSandbox, ref: str) -> str:
    return git(remote.path, "for-each-ref", "--format=%(objectname)", ref)


def in_thread(work: object, *, seconds: float = 60.0) -> BaseException | None:
    """Run ``work()`` in a thread: what it raised, None when it returned. A thread that
    does not end in ``seconds`` waits for a lock for ever: the test fails."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()  # type: ignore[operator]
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call waits for a lock its own thread holds"
    return raised[0] if raised else None


def test_a_notes_write_that_finds_the_mirror_deleted_fails_and_the_next_write_heals_it(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write reads the notes, then the mirror goes (between ``_ready`` and the
    fast-import): it fails without waiting for itself, writes nothing, and the next
    write clones the mirror again and writes on the remote's notes, all of them kept."""
    sha = remote.branch_sha("main")
    assert sha is not None
    other = remote.commit_dry({"b.yaml": "b\n"})
    mirror.refresh()
    before = mirror.refs().get(LEDGER)
    first = mirror.write_notes(LEDGER, {sha: "one\n", other: "other\n"}, message="ledger")
    mirror.push_commit(LEDGER, first, lease=before)
    real = mirror._fast_import

    def deleted_first(*args: object, **kwargs: object) -> str | None:
        monkeypatch.setattr(mirror, "_fast_import", real)
        shutil.rmtree(mirror.path)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mirror, "_fast_import", deleted_first)
    failed = in_thread(lambda: mirror.write_notes(LEDGER, {sha: "two\n"}, message="ledger"))
    assert isinstance(failed, GitError), failed
    assert (mirror.path / "HEAD").is_file()  # healed by reading the ref again, off the lock
    assert mirror.refs().get(LEDGER) == first
    assert mirror.read_note(LEDGER, sha) == "one\n"
    tip = mirror.write_notes(LEDGER, {sha: "two\n"}, message="ledger")
    assert git(mirror.path, "rev-parse", f"{tip}^") == first
    notes = git(mirror.path, "notes", f"--ref={LEDGER}", "list")
    assert sorted(line.split()[1] for line in notes.splitlines()) == sorted([sha, other])
    assert mirror.read_note(LEDGER, other) == "other\n"


def test_a_mirror_lost_while_its_fetch_clones_is_the_clone_with_no_wait_for_itself(
    tmp_path: Path, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clone of a first fetch runs under the notes lock, beside the mirror, and then
    takes the mirror's place: the mirror deleted meanwhile is not healed there (healing
    fetches, which takes that lock), the clone is the whole mirror."""
    path = tmp_path / "state" / "mirrors" / "gitops.git"
    path.mkdir(parents=True)
    git(path, "init", "--bare", "--quiet")  # a mirror that holds no ref: its fetch clones
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        real = mirror._clone

        def deleted_first() -> None:
            monkeypatch.setattr(mirror, "_clone", real)
            shutil.rmtree(mirror.path)
            real()

        monkeypatch.setattr(mirror, "_clone", deleted_first)
        assert in_thread(mirror.fetch) is None
        assert mirror.branch_sha("main") == remote.branch_sha("main")
        assert in_thread(mirror.refresh) is None


def test_a_new_mirror_is_cloned_by_its_first_refresh_with_no_init_config_or_ls_remote(
    tmp_path: Path, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    real_run = runner.subprocess.run

    def counted(args: list[str], *a: object, **k: object) -> object:
        ran.append(next(arg for arg in args[1:] if not arg.startswith("-")))
        return real_run(args, *a, **k)

    monkeypatch.setattr(runner.subprocess, "run", counted)
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        assert mirror.take_moved() is True
        assert mirror.branch_sha("main") == remote.branch_sha("main")
    assert "init" not in ran and "ls-remote" not in ran and "config" not in ran
    assert ran.count("clone") == 1


def test_a_push_by_sha_that_finds_the_mirror_deleted_fails_and_does_not_wait_for_itself(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push by SHA holds the notes lock and not the mirror's: healing there would wait
    for the mirror's lock (another thread's order) and take the notes lock again."""
    sha = remote.branch_sha("main")
    tip = mirror.write_notes(LEDGER, {sha: "one\n"}, message="ledger")
    real = mirror._push

    def deleted_first(*args: object, **kwargs: object) -> None:
        shutil.rmtree(mirror.path)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mirror, "_push", deleted_first)
    failed = in_thread(lambda: mirror.push_commit(LEDGER, tip, lease=None))
    assert isinstance(failed, MirrorLost), failed
    assert remote_ref(remote, LEDGER) == ""  # nothing pushed
    assert (mirror.path / "HEAD").is_file()  # healed once out of the notes lock


@pytest.mark.parametrize(
    ("cut", "keep"),
    [("HEAD", 5), ("packed-refs", -10), ("config", 0)],
    ids=["HEAD", "packed-refs", "config"],
)
def test_a_mirror_whose_files_were_cut_short_is_cloned_afresh_by_its_next_use(
    mirror: GitMirror, remote: GitSandbox, cut: str, keep: int
) -> None:
    """``keep`` bytes kept (from the end when negative: a line cut in two)."""
    sha = remote.branch_sha("main")
    assert sha is not None
    path = mirror.path / cut
    os.truncate(path, keep if keep >= 0 else path.stat().st_size + keep)
    with pytest.raises(GitError):
        mirror.fetch()
    mirror.refresh()  # healed first: cloned afresh
    assert git(mirror.path, "rev-parse", "refs/heads/main") == sha
    assert mirror.log(None, sha, limit=1)[0].sha == sha
    assert mirror._damaged is None


def test_a_damaged_mirror_inside_another_repository_never_works_on_that_repository(
    tmp_path: Path, remote: GitSandbox
) -> None:
    """With its HEAD cut short, git would take the repository around the state directory
    for the mirror: the mirror's commands look no higher than the mirrors' directory."""
    outer = tmp_path / "checkout"
    subprocess.run(["git", "init", "--quiet", str(outer)], check=True)
    with GitMirror(name="gitops", url=remote.url, root=outer / "state") as mirror:
        mirror.refresh()
        (mirror.path / "HEAD").write_text("re")
        with pytest.raises(GitError, match="not a git repository"):
            mirror.fetch()
        assert git(outer / ".git", "for-each-ref") == ""  # nothing fetched into the checkout
        mirror.refresh()
        assert git(mirror.path, "rev-parse", "refs/heads/main") == remote.branch_sha("main")


def test_a_reader_that_stopped_is_restarted_on_a_fresh_clone(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    sha = remote.branch_sha("main")
    repo = mirror._repo
    assert repo is not None
    mirror.commit_parents(sha)  # the persistent cat-file runs
    for process in (repo.git.cat_file_all, repo.git.cat_file_header):
        if process is not None:
            process.proc.kill()
            process.proc.wait()
    with pytest.raises(GitError, match="cannot read"):
        mirror.commit_parents(remote.commit_dry({"a.yaml": "a\n"}))
    mirror.refresh()
    assert mirror.commit_parents(sha) is not None


def test_the_notes_lock_taken_again_by_its_holder_raises_instead_of_waiting_for_ever(
    mirror: GitMirror,
) -> None:
    def twice() -> None:
        with mirror._notes_lock, mirror._notes_lock:
            pass

    assert isinstance(in_thread(twice, seconds=10), LockReentered)
    with mirror.lock, mirror.lock:  # the mirror's own lock is re-entrant
        assert mirror.lock.held()


def test_a_notes_write_moved_under_it_by_a_heal_is_told_to_read_the_notes_again(
    mirror: GitMirror, remote: GitSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer moved the remote's notes; the mirror, deleted under the write,
    heals from the remote: the write on the stale tip is ``NotesMoved`` (retried on the
    new one), never a notes commit that forgets the other writer's notes."""
    sha = remote.branch_sha("main")
    pushed_note(mirror, sha, "one\n")
    with GitMirror(name="other", url=remote.url, root=tmp_path / "other") as other:
        other.refresh()
        moved = pushed_note(other, sha, "theirs\n")
    real = mirror._fast_import

    def deleted_first(*args: object, **kwargs: object) -> str | None:
        monkeypatch.setattr(mirror, "_fast_import", real)
        shutil.rmtree(mirror.path)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mirror, "_fast_import", deleted_first)
    with pytest.raises(NotesMoved):
        mirror.write_notes(LEDGER, {sha: "mine\n"}, message="ledger")
    assert mirror.refs().get(LEDGER) == moved
    assert mirror.read_note(LEDGER, sha) == "theirs\n"
