"""The health ledger: each environment's latest healthy commit, in the state database.

``RecordHealthy`` actions land here; the reconciler reads the latest record into
each snapshot. Stored per (strategy, environment branch); history is kept.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime
from pathlib import Path

from promoter.engine.snapshot import HealthyRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS healthy (
    strategy TEXT NOT NULL, environment TEXT NOT NULL,
    dry_sha TEXT NOT NULL, hydrated_sha TEXT NOT NULL, healthy_since TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS healthy_by_env ON healthy (strategy, environment);
"""


class Ledger:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def record_healthy(
        self, strategy: str, environment: str, dry_sha: str, hydrated_sha: str, since: datetime
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO healthy VALUES (?, ?, ?, ?, ?)",
                (strategy, environment, dry_sha, hydrated_sha, since.isoformat()),
            )

    def last_healthy(self, strategy: str, environment: str) -> HealthyRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT dry_sha, hydrated_sha, healthy_since FROM healthy"
                " WHERE strategy = ? AND environment = ? ORDER BY rowid DESC LIMIT 1",
                (strategy, environment),
            ).fetchone()
        if row is None:
            return None
        return HealthyRecord(
            dry_sha=row[0], hydrated_sha=row[1], healthy_since=datetime.fromisoformat(row[2])
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()
