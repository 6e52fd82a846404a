"""Freezes: a person's stop-the-line switch, kept in git, and the freezes covering an
environment as the reader gives them to the engine.

A person's freeze is a ledger note (``promoter.state.ledger``, pushed to the repository,
so every instance and every restart sees it) on one of three keys: an environment's own
(strategy, branch), a strategy's (strategy, ``*``), or everything's (``*``, ``*``), the last
written in every repository. Each note keeps the freeze in force and its log (who set and
lifted it, when, why): the freezes' audit trail. Freeze dates and ranges of the
configuration come from ``promoter.config.freezes``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from promoter.config import Config, PromotionStrategy, Repository, environment_branch
from promoter.config.freezes import FreezeWindow, GlobalFreezeWindow
from promoter.daemon.reading.scope import every_repository
from promoter.engine import EnvLedger, Freeze, FreezePeriod
from promoter.git import GitMirror
from promoter.models import utcnow
from promoter.state.ledger import GitLedger

log = logging.getLogger("promoter.freezes")

ALL = "*"
"""The ledger key part that stands for every strategy, or every environment of one."""


def scope_words(strategy: str | None, environment: str | None) -> str:
    if strategy is None:
        return "everything"
    return f"{environment} of {strategy}" if environment else f"strategy {strategy}"


def ledger_key(strategy: str | None, environment: str | None) -> tuple[str, str]:
    """The (strategy, environment) a freeze of this scope is written under."""
    return (strategy or ALL, environment or ALL)


def manual_periods(
    read: Callable[[str, str], EnvLedger], strategy: str, branch: str, own: EnvLedger
) -> list[FreezePeriod]:
    """A person's freezes covering ``branch`` of ``strategy``: everything's, the strategy's,
    the environment's own (``own``, its ledger already read)."""
    found: list[FreezePeriod] = []
    scopes = (
        (read(ALL, ALL), "everything"),
        (read(strategy, ALL), f"strategy {strategy}"),
        (own, f"{branch} of {strategy}"),
    )
    for ledger, scope in scopes:
        if ledger.freeze is not None:
            f = ledger.freeze
            found.append(FreezePeriod(reason=f.reason, scope=scope, start=f.since, by=f.by))
    return found


def dated_periods(
    windows: Iterable[FreezeWindow], scope: str, branch: str, now: datetime
) -> list[FreezePeriod]:
    """The configured freezes covering ``branch`` that have not ended by ``now``."""
    return [
        FreezePeriod(reason=w.reason, scope=scope, start=start, end=end, time_zone=w.time_zone)
        for w in windows
        if w.covers(branch)
        for start, end in w.intervals()
        if end > now
    ]


def configured(
    strategy: PromotionStrategy, everything: Iterable[GlobalFreezeWindow]
) -> list[tuple[FreezeWindow, str]]:
    """The freeze windows of the configuration that cover ``strategy``, with their scope."""
    mine = [(w, f"strategy {strategy.name}") for w in strategy.freezes]
    mine += [
        (w, "everything" if not w.strategies else f"strategies {', '.join(w.strategies)}")
        for w in everything
        if not w.strategies or strategy.name in w.strategies
    ]
    return mine


@dataclass(frozen=True)
class FreezeResult:
    """What a freeze or unfreeze did: its scope, and the strategies it woke."""

    action: str
    scope: str
    reason: str
    by: str
    strategies: tuple[str, ...]


class Freezes:
    """Freeze and unfreeze by hand: the ledger notes, written in the repositories concerned."""

    def __init__(
        self,
        config: Config,
        ledger: GitLedger,
        mirror: Callable[[Repository], GitMirror],
        clock: Callable[[], datetime] = utcnow,
        owns: Callable[[str], bool] = every_repository,
    ) -> None:
        """``owns`` (Kubernetes mode, sharded): the repositories this replica writes in; a
        freeze of everything is written in those, each other replica writing its own."""
        self.config = config
        self.ledger = ledger
        self.mirror = mirror
        self.clock = clock
        self.owns = owns

    def _targets(
        self, strategy: str | None, environment: str | None
    ) -> tuple[list[Repository], list[str]]:
        """The repositories the freeze is written in and the strategies it covers.

        ``LookupError`` for an unknown strategy or environment."""
        if strategy is None:
            if environment is not None:
                raise LookupError("name a strategy to freeze one of its environments")
            repos = [r for r in self.config.repositories if self.owns(r.name)]
            served = {r.name for r in repos}
            names = [s.name for s in self.config.promotion_strategies if s.repository in served]
            return repos, names
        found = self.config.strategy(strategy)
        if found is None:
            raise LookupError(f"no strategy named {strategy!r}")
        if environment is not None and self.branch(strategy, environment) is None:
            raise LookupError(f"{strategy} has no environment {environment!r}")
        return [self.config.repository(found.repository)], [found.name]

    def branch(self, strategy: str, environment: str) -> str | None:
        """The branch ``environment`` names in ``strategy`` (``AmbiguousName`` for a last
        part several branches share)."""
        found = self.config.strategy(strategy)
        assert found is not None
        branches = [e.branch for e in found.environments]
        return environment_branch(branches, environment, strategy=strategy)

    def freeze(
        self, *, strategy: str | None, environment: str | None, reason: str, by: str
    ) -> FreezeResult:
        """Freeze everything, a strategy or one of its environments, until unfrozen."""
        repos, names = self._targets(strategy, environment)
        branch = self.branch(strategy, environment) if strategy and environment else None
        freeze = Freeze(reason=reason, by=by, since=self.clock())
        key = ledger_key(strategy, branch)
        for repo in repos:
            self.ledger.update(self.mirror(repo), *key, lambda led: led.frozen(freeze))
        scope = scope_words(strategy, branch)
        log.warning("frozen", extra={"scope": scope, "reason": reason, "by": by})
        return FreezeResult("frozen", scope, reason, by, tuple(names))

    def unfreeze(self, *, strategy: str | None, environment: str | None, by: str) -> FreezeResult:
        """Lift the freeze of exactly this scope (another scope's freeze stays)."""
        repos, names = self._targets(strategy, environment)
        branch = self.branch(strategy, environment) if strategy and environment else None
        at = self.clock()
        key = ledger_key(strategy, branch)
        reasons = []
        for repo in repos:
            mirror = self.mirror(repo)
            before = self.ledger.read(mirror, *key)
            if before.freeze is not None:
                reasons.append(before.freeze.reason)
            self.ledger.update(mirror, *key, lambda led: led.unfrozen(by=by, at=at))
        scope = scope_words(strategy, branch)
        if not reasons:
            raise LookupError(f"{scope} is not frozen")
        log.warning("unfrozen", extra={"scope": scope, "by": by})
        return FreezeResult("unfrozen", scope, reasons[0], by, tuple(names))
