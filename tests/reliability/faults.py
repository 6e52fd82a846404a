"""The world around the daemon in the fault-injection suite: CI, and SCM plugins that misbehave.

``CI`` reports a status on every new branch tip, as a CI system and health checks would.

``FaultyScm`` wraps any ``ScmPlugin`` and, for calls made by the daemon's worker
threads, fails a seeded share of them before they reach the SCM (``ScmUnavailable``,
``ScmRateLimited``) or after (the call took effect but its answer was lost). While a
rate limit it announced is running, it refuses every call again and records the call
as a violation. ``RacingScm`` has a hydrator push a newer commit just before a merge.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from promoter.config import Repository
from promoter.errors import ScmRateLimited, ScmUnavailable
from promoter.models import CommitStatus, PullRequest
from scm_plugins.protocol import ScmPlugin
from tests.support import WAIT, wait_for

T = TypeVar("T")

WORKER_THREAD_PREFIX = "promoter-worker"
"""Faults are injected into the daemon's reconciles, not into CI writing its statuses."""

WRITES = frozenset(
    {
        "open_pull_request",
        "update_pull_request",
        "merge_pull_request",
        "close_pull_request",
        "comment_pull_request",
        "set_commit_status",
    }
)


@dataclass(frozen=True)
class Call:
    """One call the daemon made: when, what, from which thread, and what came of it."""

    operation: str
    at: float
    thread: str
    outcome: str  # ok, unavailable, rate_limited, lost_answer, refused_while_limited, error


@dataclass(frozen=True)
class RateLimit:
    """A rate limit announced at ``at``: no call before ``at + retry_after``."""

    at: float
    retry_after: float

    @property
    def until(self) -> float:
        return self.at + self.retry_after


@dataclass(frozen=True)
class FaultPlan:
    """Which calls fail: in every ``deck`` calls, ``unavailable`` and ``rate_limited`` of them
    (seeded positions); in every ``write_deck`` writes, ``lost_answers`` reach the SCM but
    their answer is lost. Exact shares, so that a short run still sees every kind."""

    deck: int = 25
    unavailable: int = 5
    rate_limited: int = 1
    write_deck: int = 8
    lost_answers: int = 1
    retry_after: tuple[float, float] = (0.2, 0.8)


class _Deck:
    """Seeded shuffled cards, dealt one per call and reshuffled when empty."""

    def __init__(self, rng: random.Random, size: int, cards: dict[str, int]) -> None:
        self._rng = rng
        self._cards = [name for name, count in cards.items() for _ in range(count)]
        self._cards += ["ok"] * (size - len(self._cards))
        self._dealt: list[str] = []

    def deal(self) -> str:
        if not self._dealt:
            self._dealt = self._rng.sample(self._cards, len(self._cards))
        return self._dealt.pop()


@dataclass
class FaultyScm:
    """An ``ScmPlugin`` that fails a seeded share of the daemon's calls (see the module doc)."""

    inner: ScmPlugin
    seed: int
    plan: FaultPlan = field(default_factory=FaultPlan)
    clock: Callable[[], float] = time.monotonic
    calls: list[Call] = field(default_factory=list)
    limits: list[RateLimit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.inner.name
        self._rng = random.Random(self.seed)
        plan = self.plan
        self._calls_deck = _Deck(
            self._rng,
            plan.deck,
            {"unavailable": plan.unavailable, "rate_limited": plan.rate_limited},
        )
        self._writes_deck = _Deck(self._rng, plan.write_deck, {"lost_answer": plan.lost_answers})
        self._lock = threading.Lock()
        self._limited_until = float("-inf")

    # --- the fault machinery -----------------------------------------------------------

    def _call(self, operation: str, call: Callable[[], T]) -> T:
        thread = threading.current_thread().name
        if not thread.startswith(WORKER_THREAD_PREFIX):
            return call()
        with self._lock:
            now = self.clock()
            if now < self._limited_until:
                self._record(operation, now, thread, "refused_while_limited")
                raise ScmRateLimited(
                    "called again while rate limited", retry_after=self._limited_until - now
                )
            card = self._calls_deck.deal()
            if card == "unavailable":
                self._record(operation, now, thread, "unavailable")
                raise ScmUnavailable(f"injected: {operation} unavailable")
            if card == "rate_limited":
                retry_after = round(self._rng.uniform(*self.plan.retry_after), 3)
                self.limits.append(RateLimit(now, retry_after))
                self._limited_until = now + retry_after
                self._record(operation, now, thread, "rate_limited")
                raise ScmRateLimited(f"injected: {operation} rate limited", retry_after=retry_after)
            lose = operation in WRITES and self._writes_deck.deal() == "lost_answer"
        try:
            result = call()
        except Exception:
            self._record(operation, now, thread, "error")
            raise
        if lose:
            self._record(operation, now, thread, "lost_answer")
            raise ScmUnavailable(f"injected: the answer to {operation} was lost")
        self._record(operation, now, thread, "ok")
        return result

    def _record(self, operation: str, at: float, thread: str, outcome: str) -> None:
        self.calls.append(Call(operation, at, thread, outcome))

    def injected(self, outcome: str) -> int:
        return sum(1 for c in self.calls if c.outcome == outcome)

    def early_calls(self) -> list[str]:
        """Calls made by workers while a rate limit they were told about was running."""
        return [
            f"{call.operation} {call.at - limit.at:.3f}s after a rate limit of"
            f" {limit.retry_after}s ({call.thread})"
            for limit in self.limits
            for call in self.calls
            if limit.at < call.at < limit.until
        ]

    # --- ScmPlugin ------------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self._call(
            "find_open_pull_request",
            lambda: self.inner.find_open_pull_request(repo=repo, head=head, base=base),
        )

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        return self._call(
            "open_pull_request",
            lambda: self.inner.open_pull_request(
                repo=repo, head=head, base=base, title=title, body=body, labels=labels
            ),
        )

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        return self._call(
            "update_pull_request",
            lambda: self.inner.update_pull_request(
                repo=repo, number=number, title=title, body=body, labels=labels
            ),
        )

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        return self._call(
            "merge_pull_request",
            lambda: self.inner.merge_pull_request(
                repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
            ),
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._call(
            "close_pull_request",
            lambda: self.inner.close_pull_request(repo=repo, number=number, comment=comment),
        )

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._call(
            "comment_pull_request",
            lambda: self.inner.comment_pull_request(repo=repo, number=number, body=body),
        )

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        return self._call(
            "get_commit_statuses",
            lambda: self.inner.get_commit_statuses(repo=repo, sha=sha, keys=keys),
        )

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._call(
            "set_commit_status",
            lambda: self.inner.set_commit_status(repo=repo, sha=sha, status=status),
        )

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        """Credentials for git, not an SCM API call: never faulted."""
        return self.inner.git_environment(repo=repo)

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        return self.inner.folded_gate_keys

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        """Anything else (``pull_requests``, ``store``) is the wrapped plugin's."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass(frozen=True)
class Race:
    """A merge of PR ``pr`` into ``base`` that a hydrator push overtook."""

    pr: int
    base: str
    stale_head: str
    """The head SHA the daemon expected (and must never merge)."""
    new_dry_sha: str
    """The dry commit the hydrator pushed meanwhile."""


@dataclass
class RacingScm:
    """An ``ScmPlugin`` whose merges race a hydrator push to the PR's head branch.

    Before delegating a merge into a branch with races left in ``race`` (branch ->
    count), it calls ``push(base)``, which hydrates a newer dry commit onto the
    ``-next`` branches and returns its SHA; the SCM then sees a moved head.
    """

    inner: ScmPlugin
    push: Callable[[str], str]
    race: dict[str, int]
    races: list[Race] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.inner.name

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        return self.inner.folded_gate_keys

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        base = next(pr.base_branch for pr in self.pull_requests(repo=repo) if pr.number == number)
        if self.race.get(base, 0) > 0:
            self.race[base] -= 1
            self.races.append(Race(number, base, expected_head_sha, self.push(base)))
        return self.inner.merge_pull_request(
            repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
        )

    def __getattr__(self, name: str) -> Any:
        """Every other call goes straight to the wrapped plugin."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def all_green(branch: str, sha: str) -> str:
    return "success"


Poster = Callable[[str, str, str], bool]
"""``post(sha, key, phase)``: report a commit status; False when it did not get through."""


class CI:
    """A CI robot: ``ci`` on every proposed tip and ``health`` on every active tip.

    Everything is ``success`` unless ``phase(branch, sha)`` says otherwise. ``step()``
    looks at the branch tips (one ``git for-each-ref``, at most every ``every`` seconds)
    and reports what is new; a report that did not get through is tried again later.
    """

    def __init__(
        self,
        repo: Path,
        environments: Sequence[str],
        post: Poster,
        *,
        suffix: str = "-next",
        phase: Callable[[str, str], str] | None = None,
        every: float = 0.1,
    ) -> None:
        self.repo = repo
        self.keys = {b: "health" for b in environments} | {
            f"{b}{suffix}": "ci" for b in environments
        }
        self.post = post
        self.phase = phase or all_green
        self.every = every
        self.reported: set[tuple[str, str, str]] = set()
        self._last = float("-inf")

    def tips(self) -> dict[str, str]:
        out = subprocess.run(
            ["git", "-C", str(self.repo), "for-each-ref", "--format=%(objectname) %(refname)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        pairs = (line.split(" ", 1) for line in out.splitlines())
        return {ref.removeprefix("refs/heads/"): sha for sha, ref in pairs}

    def step(self, *, now: bool = False) -> bool:
        """Report the statuses of tips not reported yet; True when there were none to report.

        Looks at the tips at most once per ``every`` seconds, unless ``now``.
        """
        if not now and time.monotonic() - self._last < self.every:
            return False
        self._last = time.monotonic()
        tips = self.tips()
        caught_up = True
        for branch, key in self.keys.items():
            sha = tips.get(branch)
            if sha is None:
                continue
            phase = self.phase(branch, sha)
            if (sha, key, phase) not in self.reported:
                caught_up = False
                if self.post(sha, key, phase):
                    self.reported.add((sha, key, phase))
        return caught_up

    def caught_up(self) -> bool:
        """Look now: True when every tip had already been reported."""
        return self.step(now=True)

    def wait_for(
        self, check: Callable[[], T | None], *, timeout: float = WAIT, what: str = ""
    ) -> T:
        """``tests.support.wait_for``, reporting new statuses before every look."""

        def stepped() -> T | None:
            self.step()
            return check()

        return wait_for(stepped, timeout=timeout, what=what or str(check))

    def run_for(self, seconds: float) -> None:
        """Keep reporting for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.step()
            time.sleep(0.02)


def api_poster(client: Any, repository: str = "gitops") -> Poster:
    """Report statuses through the daemon's API (``client``: a starlette TestClient or httpx)."""

    def post(sha: str, key: str, phase: str) -> bool:
        try:
            response = client.post(
                f"/api/v1/repositories/{repository}/commits/{sha}/statuses",
                json={"key": key, "phase": phase},
            )
        except Exception:  # the daemon is down (killed): report again at the next step
            return False
        return bool(response.status_code == 201)

    return post
