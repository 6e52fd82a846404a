"""SQLite storage of the local SCM: pull requests, their comments, commit statuses and its
merge queue (the entries, and why each PR last left it).

One database file in the state dir, WAL mode, one connection per thread; an open
pull request is unique per (repository, head, base) by a partial unique index. A merge
under way is written on its PR (``merging_head``, ``merging_sha``) before the base branch
moves, so a process killed between the two leaves enough to record the merge afterwards.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from promoter.models import CommitStatus, Phase

SCHEMA = """
CREATE TABLE IF NOT EXISTS pull_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL, head TEXT NOT NULL, base TEXT NOT NULL,
    title TEXT NOT NULL, body TEXT NOT NULL, labels TEXT NOT NULL,
    state TEXT NOT NULL, head_sha TEXT, merge_sha TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    merging_head TEXT, merging_sha TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_pr
    ON pull_requests (repo, head, base) WHERE state = 'open';
CREATE TABLE IF NOT EXISTS comments (
    pr_id INTEGER NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reviews (
    repo TEXT NOT NULL, pr_id INTEGER NOT NULL, user TEXT NOT NULL,
    commit_sha TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queue_entries (
    repo TEXT NOT NULL, pr_id INTEGER NOT NULL, base TEXT NOT NULL, head_sha TEXT NOT NULL,
    base_sha TEXT NOT NULL, group_sha TEXT NOT NULL, enqueued_at TEXT NOT NULL,
    PRIMARY KEY (repo, pr_id)
);
CREATE TABLE IF NOT EXISTS queue_removals (
    repo TEXT NOT NULL, pr_id INTEGER NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS statuses (
    repo TEXT NOT NULL, sha TEXT NOT NULL, key TEXT NOT NULL, phase TEXT NOT NULL,
    description TEXT NOT NULL, url TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (repo, sha, key)
);
"""


ADDED_COLUMNS = {"merging_head": "TEXT", "merging_sha": "TEXT"}
"""Columns later than the first layout, added to a database file that lacks them."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _add_missing_columns(db: sqlite3.Connection) -> None:
    present = {row["name"] for row in db.execute("PRAGMA table_info(pull_requests)")}
    for name, kind in ADDED_COLUMNS.items():
        if name not in present:
            try:
                db.execute(f"ALTER TABLE pull_requests ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise


class LocalStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        with self._db() as db:
            db.executescript(SCHEMA)
            _add_missing_columns(db)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def close(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # --- pull requests ---------------------------------------------------------------

    def open_pr(self, repo: str) -> list[sqlite3.Row]:
        return (
            self._db()
            .execute(
                "SELECT * FROM pull_requests WHERE repo = ? AND state = 'open' ORDER BY id", (repo,)
            )
            .fetchall()
        )

    def find_open(self, repo: str, head: str, base: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = (
            self._db()
            .execute(
                "SELECT * FROM pull_requests WHERE repo=? AND head=? AND base=? AND state='open'",
                (repo, head, base),
            )
            .fetchone()
        )
        return row

    def get(self, repo: str, number: int) -> sqlite3.Row | None:
        row: sqlite3.Row | None = (
            self._db()
            .execute("SELECT * FROM pull_requests WHERE repo = ? AND id = ?", (repo, number))
            .fetchone()
        )
        return row

    def create(
        self, repo: str, head: str, base: str, title: str, body: str, labels: tuple[str, ...]
    ) -> sqlite3.Row:
        """Insert an open PR, or return the one already open for head/base."""
        now = _now()
        with contextlib.suppress(sqlite3.IntegrityError):
            self._db().execute(
                "INSERT INTO pull_requests (repo, head, base, title, body, labels, state,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?)",
                (repo, head, base, title, body, json.dumps(list(labels)), now, now),
            )
        row = self.find_open(repo, head, base)
        assert row is not None
        return row

    def update(self, repo: str, number: int, **values: Any) -> None:
        if "labels" in values:
            values["labels"] = json.dumps(list(values["labels"]))
        values["updated_at"] = _now()
        columns = ", ".join(f"{name} = ?" for name in values)
        self._db().execute(
            f"UPDATE pull_requests SET {columns} WHERE repo = ? AND id = ?",
            (*values.values(), repo, number),
        )

    def add_review(self, repo: str, number: int, user: str, commit_sha: str) -> None:
        self._db().execute(
            "INSERT INTO reviews (repo, pr_id, user, commit_sha, created_at) VALUES (?,?,?,?,?)",
            (repo, number, user, commit_sha, _now()),
        )

    def reviews(self, repo: str, number: int) -> list[sqlite3.Row]:
        return list(
            self._db().execute(
                "SELECT * FROM reviews WHERE repo = ? AND pr_id = ? ORDER BY rowid", (repo, number)
            )
        )

    def add_comment(self, number: int, body: str) -> None:
        self._db().execute(
            "INSERT INTO comments (pr_id, body, created_at) VALUES (?, ?, ?)",
            (number, body, _now()),
        )

    def comments(self, number: int) -> list[str]:
        rows = (
            self._db()
            .execute("SELECT body FROM comments WHERE pr_id = ? ORDER BY rowid", (number,))
            .fetchall()
        )
        return [r["body"] for r in rows]

    def all_prs(self, repo: str) -> list[sqlite3.Row]:
        return (
            self._db()
            .execute("SELECT * FROM pull_requests WHERE repo = ? ORDER BY id", (repo,))
            .fetchall()
        )

    # --- the merge queue -------------------------------------------------------------

    def queue(self, repo: str) -> list[sqlite3.Row]:
        """The queue's entries, first enqueued first."""
        sql = "SELECT * FROM queue_entries WHERE repo = ? ORDER BY rowid"
        return self._db().execute(sql, (repo,)).fetchall()

    def queued(self, repo: str, number: int) -> sqlite3.Row | None:
        sql = "SELECT * FROM queue_entries WHERE repo = ? AND pr_id = ?"
        row: sqlite3.Row | None = self._db().execute(sql, (repo, number)).fetchone()
        return row

    def enqueue(
        self, repo: str, number: int, *, base: str, head_sha: str, base_sha: str, group_sha: str
    ) -> None:
        self._db().execute(
            "INSERT INTO queue_entries VALUES (?, ?, ?, ?, ?, ?, ?)",
            (repo, number, base, head_sha, base_sha, group_sha, _now()),
        )

    def regroup(self, repo: str, number: int, *, base_sha: str, group_sha: str) -> None:
        """The entry's merge group built again on a base that moved."""
        self._db().execute(
            "UPDATE queue_entries SET base_sha = ?, group_sha = ? WHERE repo = ? AND pr_id = ?",
            (base_sha, group_sha, repo, number),
        )

    def dequeue(self, repo: str, number: int, reason: str) -> None:
        """Out of the queue, with why (kept: the queue tells it when asked)."""
        with self._db() as db:
            db.execute("BEGIN")
            db.execute("DELETE FROM queue_entries WHERE repo = ? AND pr_id = ?", (repo, number))
            db.execute(
                "INSERT INTO queue_removals VALUES (?, ?, ?, ?)", (repo, number, reason, _now())
            )

    def removal(self, repo: str, number: int) -> sqlite3.Row | None:
        """Why PR ``number`` last left the queue, if it did."""
        sql = "SELECT * FROM queue_removals WHERE repo = ? AND pr_id = ? ORDER BY rowid DESC"
        row: sqlite3.Row | None = self._db().execute(sql, (repo, number)).fetchone()
        return row

    # --- statuses --------------------------------------------------------------------

    def set_status(self, repo: str, sha: str, status: CommitStatus) -> None:
        self._db().execute(
            "INSERT OR REPLACE INTO statuses VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                repo,
                sha,
                status.key,
                status.phase.value,
                status.description,
                status.url,
                status.updated_at.isoformat(),
            ),
        )

    def statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        rows = (
            self._db()
            .execute("SELECT * FROM statuses WHERE repo = ? AND sha = ? ORDER BY key", (repo, sha))
            .fetchall()
        )
        return [
            CommitStatus(
                key=r["key"],
                phase=Phase(r["phase"]),
                description=r["description"],
                url=r["url"],
                source="local",
                updated_at=datetime.fromisoformat(r["updated_at"]),
            )
            for r in rows
        ]
