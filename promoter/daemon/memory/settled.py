"""What each strategy's last reconcile read, and which of it is settled.

An environment's running commit is *settled* when its verdict cannot change by itself:
it is recorded healthy with every active gate green, no revert is open, and every
environment after it is up to date (so no promotion waits on its health). Its
proposed commit is settled once there is nothing to promote (the same dry commit runs)
and no pull request is open: those statuses gate nothing until a branch moves, however
long the environments after it wait. The environment is settled when both are and it
is up to date. A strategy is *quiet* when every environment is settled and its
reconcile did nothing and asked for nothing later.

The statuses of settled commits and the "none open" of settled environments' pull
requests are kept in the caches beyond their age limits (``StatusCache.settle``,
``PullRequestCache.settle``); the periodic resync (``promoter.daemon.loop.resync``) skips
quiet strategies whose refs did not move, and re-reads them in turn (its sweep). A ref
that moves (a push webhook, the ref poller, the resync's ``ls-remote``) unsettles the
strategy first, so a new proposal is decided on statuses no older than the TTL.
Thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from promoter.engine import (
    Decision,
    EnvironmentSnapshot,
    EnvLedger,
    EnvState,
    Snapshot,
    is_no_op,
)
from promoter.git import GitMirror
from promoter.git.lineage import LINEAGE_REF
from promoter.git.metadata import NOTES_REF
from promoter.models import Phase
from promoter.state.ledger import LEDGER_REF
from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache

PrKey = tuple[str, str, str]


def notes_tips(mirror: GitMirror) -> tuple[str | None, ...]:
    """The tips of the notes refs a read depends on: hydrator, lineage, ledger (last)."""
    return tuple(mirror.branch_sha(ref) for ref in (NOTES_REF, LINEAGE_REF, LEDGER_REF))


@dataclass(frozen=True, slots=True)
class Seen:
    """One strategy's last successful reconcile, as the resync needs it."""

    repository: str
    quiet: bool
    refs: tuple[tuple[str, str | None], ...]
    """``(branch, SHA read)`` of every active and proposed branch (None: missing)."""
    notes: tuple[str | None, ...]
    """The tips of the notes refs the read depended on, taken before it."""
    ledgers: tuple[tuple[str, EnvLedger], ...]
    """What the read found in each environment's ledger."""
    shas: frozenset[str]
    settled: frozenset[str]
    prs: tuple[PrKey, ...]
    settled_prs: frozenset[PrKey]


@dataclass(frozen=True, slots=True)
class Settled:
    """What of one environment cannot change by itself (see the module's text)."""

    running: bool
    """Its running commit: recorded healthy, active gates green, everything after it up
    to date."""
    proposal: bool
    """Its proposed commit: nothing to promote (rule 1) and no pull request open, so its
    statuses gate nothing until a branch moves."""
    up_to_date: bool
    """Its verdict is "up to date": nothing to promote, and no active gate failed."""

    @property
    def environment(self) -> bool:
        return self.running and self.proposal and self.up_to_date


def settled_environments(snapshot: Snapshot, decision: Decision) -> list[Settled]:
    """Per environment, what of it is settled."""
    up = [v.state is EnvState.UP_TO_DATE for v in decision.environments]
    if len(up) != len(snapshot.environments):
        return [Settled(False, False, False)] * len(snapshot.environments)
    return [
        Settled(
            running=all(up[i + 1 :]) and _healthy(env),
            proposal=is_no_op(snapshot, env) and env.pull_request is None,
            up_to_date=up[i],
        )
        for i, env in enumerate(snapshot.environments)
    ]


def _healthy(env: EnvironmentSnapshot) -> bool:
    active = env.active
    if active is None or env.error or active.metadata_error:
        return False
    if env.revert_pull_request is not None:
        return False
    healthy = env.ledger.last_healthy
    if healthy is None or healthy.hydrated_sha != active.hydrated_sha:
        return False
    phases = {s.key: s.phase for s in active.statuses}
    return all(phases.get(key) is Phase.SUCCESS for key in env.active_keys)


class SettledIndex:
    """``Seen`` per strategy; marks and unmarks settled entries in the caches."""

    def __init__(self, statuses: StatusCache, pulls: PullRequestCache) -> None:
        self._statuses = statuses
        self._pulls = pulls
        self._lock = threading.Lock()
        self._seen: dict[str, Seen] = {}

    def get(self, key: str) -> Seen | None:
        with self._lock:
            return self._seen.get(key)

    def observe(
        self,
        key: str,
        snapshot: Snapshot,
        decision: Decision,
        *,
        notes: tuple[str | None, ...],
        idle: bool,
    ) -> None:
        """Record a successful reconcile; ``idle``: it carried out nothing but healthy
        records (``snapshot`` shows them) and asked for nothing later."""
        repo = snapshot.repository
        flags = settled_environments(snapshot, decision)
        refs: list[tuple[str, str | None]] = []
        shas: set[str] = set()
        settled: set[str] = set()
        unsettled: set[str] = set()
        prs: list[PrKey] = []
        settled_prs: set[PrKey] = set()
        for env, settled_env in zip(snapshot.environments, flags, strict=True):
            refs.append((env.branch, env.active.hydrated_sha if env.active else None))
            refs.append((env.proposed_branch, env.proposed.hydrated_sha if env.proposed else None))
            pr_key = (repo, env.proposed_branch, env.branch)
            prs.append(pr_key)
            if env.active is not None:
                shas.add(env.active.hydrated_sha)
                (settled if settled_env.running else unsettled).add(env.active.hydrated_sha)
            if env.proposed is not None:
                shas.add(env.proposed.hydrated_sha)
                (settled if settled_env.proposal else unsettled).add(env.proposed.hydrated_sha)
            if settled_env.environment:
                settled_prs.add(pr_key)
        settled -= unsettled  # a commit also read where something waits
        seen = Seen(
            repository=repo,
            quiet=idle and all(f.environment for f in flags),
            refs=tuple(refs),
            notes=notes,
            ledgers=tuple((env.branch, env.ledger) for env in snapshot.environments),
            shas=frozenset(shas),
            settled=frozenset(settled),
            prs=tuple(prs),
            settled_prs=frozenset(settled_prs),
        )
        with self._lock:
            self._seen[key] = seen
        for sha in shas:
            self._statuses.settle(repo, sha, sha in settled)
        for pr_key in prs:
            self._pulls.settle(pr_key, pr_key in settled_prs)

    def unsettle(self, key: str, *, forget: bool = False) -> None:
        """Stop trusting what ``key`` read beyond the age limits; ``forget``: drop the
        unsettled reads as well, so that the next reconcile reads everything afresh."""
        with self._lock:
            seen = self._seen.pop(key, None)
        if seen is None:
            return
        self.drop(seen, everything=True, forget=forget)

    def drop(self, seen: Seen, *, everything: bool, forget: bool = True) -> None:
        """Forget ``seen``'s unsettled reads (``everything``: its settled ones too)."""
        repo = seen.repository
        for sha in seen.shas:
            if everything or sha not in seen.settled:
                if forget:
                    self._statuses.forget(repo, sha)
                else:
                    self._statuses.settle(repo, sha, False)
        for pr_key in seen.prs:
            if everything or pr_key not in seen.settled_prs:
                if forget:
                    self._pulls.forget(pr_key)
                else:
                    self._pulls.settle(pr_key, False)

    def forget(self, key: str) -> None:
        """A failed reconcile: the next resync reads it whole."""
        with self._lock:
            self._seen.pop(key, None)
