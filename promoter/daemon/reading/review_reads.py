"""An approval gate's read of a pull request's reviews, through the gate contract.

The read stays in the strategy's reconcile, so that a merge is never decided on reviews
older than the pass that decides it; it is bounded by the approval's ``timeout`` and by
its SCM's share of calls in flight (``GateCalls``), so a slow SCM delays that strategy
by at most the timeout, and a hanging one holds its own few threads, no worker. Any
error or an answer of the wrong shape leaves the reviews unread with the SCM's words
("approval: github not reachable: ..."): the gate waits, the other gates and
environments are judged as usual, and the strategy is read again with backoff.
"""

from __future__ import annotations

import threading
from collections.abc import Collection

from promoter.config import Repository
from promoter.daemon.checks.gate_calls import GateCalls, GateTrouble, words_of
from promoter.engine import ReviewsRead, Snapshot
from promoter.errors import ScmError
from promoter.models import Review
from scm_plugins.protocol import Reviews

BASE_DELAY = 1.0
"""Seconds before the first retry of a read that failed; doubled for each one in a row."""


class ReviewReads:
    def __init__(self, calls: GateCalls | None = None, *, max_backoff: float = 300.0) -> None:
        self.calls = calls or GateCalls()
        self.max_backoff = max_backoff
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, int], int] = {}

    def read(
        self,
        plugin: Reviews,
        name: str,
        repo: Repository,
        number: int,
        teams: Collection[str],
        *,
        timeout: float,
    ) -> ReviewsRead:
        """The reviews, or why they could not be read in the words of SCM ``name``."""
        ident = (repo.name, number)
        try:
            found = self.calls.call(
                f"scm {repo.scm_provider}",
                lambda: plugin.get_reviews(repo=repo, number=number, teams=teams),
                timeout=timeout,
            )
            if not isinstance(found, list) or not all(isinstance(r, Review) for r in found):
                raise TypeError(f"not a list of reviews: {type(found).__name__}")
        except (ScmError, GateTrouble) as exc:
            self._failed(ident)
            return ReviewsRead(reason=f"approval: {name} not reachable: {words_of(exc)}")
        except Exception as exc:
            self._failed(ident)
            why = f"{type(exc).__name__}: {words_of(exc)}"
            return ReviewsRead(reason=f"approval: {name} answered garbage: {why}")
        with self._lock:
            self._failures.pop(ident, None)
        return ReviewsRead(value=tuple(found))

    def _failed(self, ident: tuple[str, int]) -> None:
        with self._lock:
            if len(self._failures) > 10_000:
                self._failures.clear()
            self._failures[ident] = self._failures.get(ident, 0) + 1

    def retry_in(self, snapshot: Snapshot) -> float | None:
        """When to read the snapshot's strategy again for the reviews that failed, if any."""
        delays = []
        with self._lock:
            for env in snapshot.environments:
                pr = env.pull_request
                if env.approvals.reviews.reason is None or pr is None:
                    continue
                failures = self._failures.get((snapshot.repository, pr.number), 0)
                if failures:
                    delays.append(min(BASE_DELAY * 2 ** (failures - 1), self.max_backoff))
        return min(delays, default=None)
