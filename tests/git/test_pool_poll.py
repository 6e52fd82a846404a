"""The poller sees a change even when another caller's fetch brought it in first.

A reconcile's refresh, a ledger write retried on a fresh fetch, or an audit append's
first fetch can bring a pushed branch into the mirror between two polls; the next
``ls-remote`` then matches the mirror, and without a record of that fetch the poll would
report nothing moved and no strategy would be woken until the next resync.
"""

from __future__ import annotations

from pathlib import Path

from promoter.config import Repository
from promoter.git.metadata import NOTES_REF
from promoter.git.pool import MirrorPool
from tests.gitrepo import GitSandbox


def test_a_change_another_fetch_took_first_is_still_reported_by_the_next_poll(
    tmp_path: Path,
) -> None:
    remote = GitSandbox(tmp_path)
    remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    repo = Repository(name="gitops", url=remote.url, scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    assert pool.poll(repo) is True  # the first clone
    assert pool.poll(repo) is False
    new = remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:2\n"}, "Bump")
    pool.get(repo).fetch()  # as a ledger write's retry does, outside the poller
    assert pool.get(repo).branch_sha("main") == new
    assert pool.poll(repo) is True
    assert pool.poll(repo) is False  # reported once


def test_a_fetch_that_brought_nothing_reports_nothing(tmp_path: Path) -> None:
    remote = GitSandbox(tmp_path)
    remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    repo = Repository(name="gitops", url=remote.url, scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    pool.poll(repo)
    pool.get(repo).fetch()
    assert pool.poll(repo) is False


def test_a_note_written_and_not_pushed_yet_is_no_move_when_a_fetch_resets_it(
    tmp_path: Path,
) -> None:
    """The promoter's own notes, written in the mirror and reset by a fetch before their
    push: reporting that as a move would wake the strategies for their own writes."""
    remote = GitSandbox(tmp_path)
    remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    repo = Repository(name="gitops", url=remote.url, scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    pool.poll(repo)
    mirror = pool.get(repo)
    mirror.write_note("refs/notes/promoter.ledger", remote.branch_sha("main") or "", "{}")
    mirror.fetch()
    assert pool.poll(repo) is False


def test_a_hydrator_note_another_fetch_took_first_is_reported_by_the_next_poll(
    tmp_path: Path,
) -> None:
    """A note-only hydrator moves the branches, then adds each commit's note: a fetch
    between the two sees the branch without its metadata, and the note that follows,
    when another caller's fetch brings it in, is what the strategy waits for."""
    remote = GitSandbox(tmp_path)
    sha = remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add")
    repo = Repository(name="gitops", url=remote.url, scm_provider="local")
    pool = MirrorPool(root=tmp_path / "state", credentials=lambda r: {})
    assert pool.poll(repo) is True
    remote.git("notes", f"--ref={NOTES_REF}", "add", "-f", "-m", '{"drySha": "x"}', sha)
    pool.get(repo).fetch()  # a ledger write's retry, outside the poller
    assert pool.get(repo).refs().get(NOTES_REF)
    assert pool.poll(repo) is True
    assert pool.poll(repo) is False
