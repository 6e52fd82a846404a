"""The world of ``bench/shards.py``: the fleet as custom resources, changes made to it, and
what the shared local SCM and the audit log say happened.

A *change* to strategy ``app-i`` is a new dry commit on its repository's ``main`` and a
hydrated commit for it on ``app-i/dev-next`` (parent: what ``app-i/dev`` runs), as a
hydrator would push them; its pull request waits for a ``ci`` status on that commit.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from common import FastImport, Fleet, git

from promoter.git.metadata import METADATA_FILE, render_metadata

NS = "bench"
GROUP = "promoter.argoproj.io/v1alpha1"


def objects(fleet: Fleet) -> list[dict[str, Any]]:
    """The fleet as the custom resources a platform team would apply."""
    found: list[dict[str, Any]] = [
        {
            "apiVersion": GROUP,
            "kind": "ScmProvider",
            "metadata": {"name": "local", "namespace": NS},
            "spec": {"local": {}},
        }
    ]
    for r in range(fleet.repos):
        spec = {"url": str(fleet.repo_path(r)), "scmProviderRef": {"name": "local"}}
        found.append(
            {
                "apiVersion": GROUP,
                "kind": "GitRepository",
                "metadata": {"name": f"gitops-{r}", "namespace": NS},
                "spec": {**spec, "pollInterval": 0},
            }
        )
    for i in range(fleet.strategies):
        found.append(
            {
                "apiVersion": GROUP,
                "kind": "PromotionStrategy",
                "metadata": {"name": f"app-{i}", "namespace": NS},
                "spec": {
                    "gitRepositoryRef": {"name": f"gitops-{i % fleet.repos}"},
                    "proposedCommitStatuses": [{"key": "ci"}],
                    "environments": [{"branch": f"app-{i}/{env}"} for env in fleet.environments],
                },
            }
        )
    return found


@dataclass
class Change:
    strategy: int
    repo: str
    """The repository's name in the daemon (``bench.gitops-N``)."""
    head: str
    base: str
    sha: str
    """The hydrated commit the pull request carries."""
    made: float
    opened: float | None = None
    gated: float | None = None
    accepted: float | None = None
    """When a replica accepted the ``ci`` status (after any 503 retries)."""
    merged: float | None = None
    tries: list[tuple[str, str, float]] = field(default_factory=list)
    """The ``ci`` status's posts: (replica, its answer or error, seconds it took)."""

    def story(self) -> dict[str, Any]:
        """When each step happened (epoch seconds), for the slowest and the lost."""
        return {
            "strategy": f"app-{self.strategy}",
            "repository": self.repo,
            "made": round(self.made, 3),
            "opened": round(self.opened, 3) if self.opened else None,
            "gated": round(self.gated, 3) if self.gated else None,
            "accepted": round(self.accepted, 3) if self.accepted else None,
            "merged": round(self.merged, 3) if self.merged else None,
            "tries": [list(t) for t in self.tries],
        }


class Changes:
    """Makes changes; one at a time per repository (a hydrator pushes them in turn)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self._locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()
        self._n = 0

    def make(self, i: int) -> Change:
        r = i % self.fleet.repos
        path = self.fleet.repo_path(r)
        with self._guard:
            self._n += 1
            n = self._n
            lock = self._locks[r]
        env = self.fleet.environments[0]
        base = f"app-{i}/{env}"
        with lock:
            main, active = git(path, "rev-parse", "main", base).split()
            dry = FastImport()
            mark = dry.commit(
                "refs/heads/main", f"Change {n}\n", {f"apps/app-{i}/VERSION": f"{n}\n"}, parent=main
            )
            dry_sha = dry.run(path)[mark]
            hydrated = _Hydrated(path, base, active)
            manifest = f"app: app-{i}\nenv: {env}\nimage: {n}\n"
            metadata = render_metadata(dry_sha=dry_sha, repo_url=str(path), subject=f"Change {n}")
            sha = hydrated.commit(
                {f"apps/app-{i}/{env}/manifest.yaml": manifest, METADATA_FILE: metadata}, n
            )
        return Change(i, f"{NS}.gitops-{r}", base + "-next", base, sha, time.time())


class _Hydrated:
    """One hydrated commit on ``<base>-next`` on top of ``base``'s tip, files replaced."""

    def __init__(self, path: Path, base: str, parent: str) -> None:
        self.path, self.base, self.parent = path, base, parent

    def commit(self, files: dict[str, str], n: int) -> str:
        lines = [f"commit refs/heads/{self.base}-next", "mark :1"]
        lines.append(f"committer bench <bench@localhost> {int(time.time())} +0000")
        message = f"hydrate change {n}\n".encode()
        parts = [("\n".join(lines) + "\n").encode(), b"data %d\n" % len(message) + message]
        ops = [f"from {self.parent}"]
        for name, text in files.items():
            payload = text.encode()
            ops.append(f"M 100644 inline {name}\ndata {len(payload)}\n{text}")
        parts.append(("\n".join(ops) + "\n\n").encode())
        marks = self.path / f"bench-marks-{n}"
        stream = b"".join(parts) + b"done\n"
        git(
            self.path,
            "fast-import",
            "--quiet",
            "--done",
            "--force",
            f"--export-marks={marks}",
            stdin=stream,
        )
        sha = marks.read_text().split()[1]
        marks.unlink()
        return sha


def _parse(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


LOOKBACK = 5.0
"""Seconds before the newest update read that each read looks back: a replica stamps a
pull request before its transaction commits, so one committed after a later-stamped one
was read would be missed (a merge the benchmark then counted lost)."""


def _before(stamp: str, seconds: float) -> str:
    if not stamp:
        return stamp
    earlier = datetime.fromisoformat(stamp) - timedelta(seconds=seconds)
    return earlier.isoformat(timespec="microseconds")


@dataclass
class Pull:
    number: int
    state: str
    created: float
    updated: float


class StoreWatcher:
    """Reads the shared local SCM's pull requests every 50 ms, for those who wait on them."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.pulls: dict[tuple[str, str], dict[int, Pull]] = defaultdict(dict)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._since = ""
        self._thread = threading.Thread(target=self._run, name="store-watcher", daemon=True)

    def start(self) -> StoreWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        db = sqlite3.connect(self.database, timeout=30)
        while not self._stop.is_set():
            rows = db.execute(
                "SELECT id, repo, head, state, created_at, updated_at FROM pull_requests"
                " WHERE updated_at >= ?",
                (_before(self._since, LOOKBACK),),
            ).fetchall()
            with self._cond:
                for number, repo, head, state, created, updated in rows:
                    self.pulls[(repo, head)][number] = Pull(
                        number, state, _parse(created), _parse(updated)
                    )
                    self._since = max(self._since, updated)
                self._cond.notify_all()
            self._stop.wait(0.05)
        db.close()

    def wait(self, change: Change, state: str, *, after: float, timeout: float) -> Pull | None:
        """The first pull request of ``change`` in ``state`` updated after ``after``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for pull in self.pulls.get((change.repo, change.head), {}).values():
                    if pull.state == state and pull.updated >= after:
                        return pull
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)


@dataclass
class Audit:
    """The writes that passed the fence, from every replica's audit log lines."""

    opens: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(repository, head) -> distinct pull requests opened for it."""
    merges: Counter[tuple[str, int]] = field(default_factory=Counter)
    """(repository, pull request) -> merges that went through."""
    by_replica: Counter[str] = field(default_factory=Counter)

    @classmethod
    def read(cls, path: Path, since: float) -> Audit:
        audit = cls()
        numbers: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
        if not path.exists():
            return audit
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry["at"] < since:
                continue
            audit.by_replica[f"{entry['replica']} {entry['op']}"] += 1
            if entry["op"] == "open":
                numbers[(entry["repo"], entry["head"])].add(entry["number"])
            else:
                audit.merges[(entry["repo"], entry["number"])] += 1
        audit.opens = Counter({key: len(found) for key, found in numbers.items()})
        return audit


def audit_figures(
    cluster: Any, fleet: Fleet, changes: list[Change], since: float
) -> dict[str, Any]:
    audit = Audit.read(cluster.audit, since)
    changed = {(c.repo, c.head) for c in changes}
    duplicates = sum(n - 1 for key, n in audit.opens.items() if key in changed and n > 1)
    double = sum(n - 1 for n in audit.merges.values() if n > 1)
    git_merges = 0
    for c in changes:
        path = fleet.repo_path(c.strategy % fleet.repos)
        count = len(git(path, "rev-list", "--merges", c.base).split())
        git_merges += max(0, count - 1)
    return {
        "duplicate_prs": duplicates,
        "double_merges": double + git_merges,
        "writes_by_replica": dict(sorted(audit.by_replica.items())),
    }
