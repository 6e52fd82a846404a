"""Manual operations a person runs on an environment: revert, hold, release, break-glass promote.

Each runs under the strategy's lock (never beside a reconcile of it), reads the strategy
fresh, asks the engine what the request means (``promoter.engine.operations``) and carries
out its answer through the executor, like a reconcile would; the API then wakes the strategy.
Each answers a typed result (``results``); its log lines carry the strategy, the
``manual_operation`` and the environment (``promoter.logs.log_context``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

from promoter.config import PromotionStrategy, Repository
from promoter.daemon.loop.reconciler import Reconciler
from promoter.daemon.operations.results import (
    ApproveChangeResult,
    ApproveResult,
    HoldResult,
    MergeResult,
    PinResult,
    PromoteResult,
    ReleaseResult,
    RevertResult,
    UnpinResult,
)
from promoter.engine import (
    Action,
    ApproveChange,
    HoldDryCommit,
    OpenPullRequest,
    Refusal,
    ReleaseHold,
    Snapshot,
)
from promoter.engine import operations as rules
from promoter.errors import PermanentError
from promoter.git import GitMirror
from promoter.logs import log_context
from promoter.models import utcnow

log = logging.getLogger("promoter.operations")

Decide = Callable[[Snapshot, int], "list[Action] | Refusal"]
P = ParamSpec("P")
R = TypeVar("R")
Method = Callable[Concatenate["Operations", str, P], R]


class OperationError(PermanentError):
    """The operation cannot be done as asked; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Target:
    strategy: PromotionStrategy
    repo: Repository
    mirror: GitMirror
    snapshot: Snapshot
    index: int
    merged: list[str] = field(default_factory=list)
    """Environments whose merge the executor carried out."""

    @property
    def branch(self) -> str:
        return self.snapshot.environments[self.index].branch

    @property
    def later(self) -> tuple[str, ...]:
        return tuple(e.branch for e in self.snapshot.environments[self.index :])


def logged(operation: str) -> Callable[[Method[P, R]], Method[P, R]]:
    """Every log line of the operation carries its strategy and ``manual_operation`` (the
    field ``operation`` is an SCM call's)."""

    def wrap(method: Method[P, R]) -> Method[P, R]:
        def run(self: Operations, strategy: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
            with log_context(strategy=strategy, manual_operation=operation):
                return method(self, strategy, *args, **kwargs)

        functools.update_wrapper(run, method)
        return run

    return wrap


class Operations:
    def __init__(self, reconciler: Reconciler) -> None:
        self.rec = reconciler

    def _target(self, strategy_name: str, environment: str) -> Target:
        strategy = self.rec.config.strategy(strategy_name)
        if strategy is None:
            raise OperationError(f"no strategy named {strategy_name!r}", status=404)
        repo = self.rec.config.repository(strategy.repository)
        mirror = self.rec.mirrors.fresh(repo)
        reader = self.rec.reader(strategy.name, self.rec.plugin_for(repo))
        snapshot = reader.read(strategy, repo, mirror)
        index = rules.environment_index(snapshot, environment)
        if index is None:
            branches = ", ".join(e.branch for e in snapshot.environments)
            raise OperationError(
                f"{strategy_name} has no environment {environment!r} (it has {branches})",
                status=404,
            )
        return Target(strategy, repo, mirror, snapshot, index)

    def _apply(
        self, strategy: str, environment: str, decide: Decide, *, one_environment: bool = True
    ) -> tuple[Target, list[Action]]:
        """Read, ask the engine, carry out its answer; once more after opening a PR.

        What is carried out logs the environment's branch (``one_environment``)."""
        with self.rec.key_lock(strategy):
            for _ in range(2):
                target = self._target(strategy, environment)
                answer = decide(target.snapshot, target.index)
                if isinstance(answer, Refusal):
                    raise OperationError(answer.reason, status=answer.status)
                plugin = self.rec.plugin_for(target.repo)
                executor = self.rec.executor(plugin, self.rec.reader(strategy, plugin))
                with log_context(environment=target.branch if one_environment else None):
                    outcome = executor.run(
                        target.snapshot, target.repo, target.mirror, tuple(answer)
                    )
                target.merged = outcome.merged
                if not any(isinstance(a, OpenPullRequest) for a in answer):
                    return target, answer
        raise OperationError(f"the pull request for {environment} did not appear; try again")

    # --- the operations --------------------------------------------------------------

    @logged("hold")
    def hold(
        self,
        strategy: str,
        environment: str,
        *,
        dry_sha: str | None,
        reason: str,
        by: str = "a person",
    ) -> HoldResult:
        target, actions = self._apply(
            strategy,
            environment,
            lambda s, i: rules.hold(s, i, dry_sha=dry_sha, reason=reason, now=utcnow(), by=by),
        )
        held = next(a.dry_sha for a in actions if isinstance(a, HoldDryCommit))
        return HoldResult(held=held, environments=target.later, reason=reason)

    @logged("release")
    def release(
        self,
        strategy: str,
        environment: str,
        *,
        dry_sha: str | None,
        by: str = "a person",
        revert_holds: bool = True,
    ) -> ReleaseResult:
        """Release holds; a hold a revert set only with ``revert_holds`` (an admin)."""
        target, actions = self._apply(
            strategy,
            environment,
            lambda s, i: rules.release(
                s, i, dry_sha=dry_sha, now=utcnow(), by=by, revert_holds=revert_holds
            ),
        )
        shas = tuple(sorted({a.dry_sha for a in actions if isinstance(a, ReleaseHold)}))
        paused = target.snapshot.environments[target.index].ledger.paused
        return ReleaseResult(
            released=shas,
            environments=target.later,
            unpaused=target.branch if paused else None,
            paused_for=paused,
        )

    @logged("revert")
    def revert(
        self, strategy: str, environment: str, *, to: str | None, by: str = "a person"
    ) -> RevertResult:
        def decide(snapshot: Snapshot, index: int) -> list[Action] | Refusal:
            config = self.rec.config.strategy(strategy)
            assert config is not None
            auto_merge = config.environments[index].auto_revert.auto_merge
            return rules.revert(snapshot, index, to=to, auto_merge=auto_merge, by=by)

        target, actions = self._apply(strategy, environment, decide)
        (action,) = actions
        assert action.kind == "revert"
        return RevertResult(
            reverting=target.branch, to=action.restore.dry_sha, from_=action.bad_dry_sha
        )

    @logged("promote")
    def promote(
        self, strategy: str, environment: str, *, reason: str, by: str = "a person"
    ) -> PromoteResult:
        """Break glass: merge now past every gate but never-backwards; kept in the ledger."""
        target, actions = self._apply(
            strategy,
            environment,
            lambda s, i: rules.promote(s, i, reason=reason, now=utcnow(), by=by),
        )
        merge = next(a for a in actions if a.kind == "merge")
        assert merge.kind == "merge"
        log.warning(
            "break-glass promotion",
            extra={
                "strategy": strategy,
                "environment": target.branch,
                "sha": merge.dry_sha,
                "reason": reason,
                "by": by,
            },
        )
        return PromoteResult(promoted=merge.dry_sha, environment=target.branch, pr=merge.number)

    @logged("merge")
    def merge(self, strategy: str, environment: str, *, by: str | None = None) -> MergeResult:
        """Merge the PR that waits for a person (revert, or promotion with every gate
        passing), with the head the engine read as its guard; the message names ``by``."""
        target, actions = self._apply(strategy, environment, lambda s, i: rules.merge(s, i, by=by))
        (merge,) = actions
        assert merge.kind == "merge"
        if target.branch not in target.merged:
            raise OperationError(
                f"pull request #{merge.number} was not merged now: its gates changed on the"
                " SCM, or the SCM's answer was lost; look at it again"
            )
        return MergeResult(
            merged=merge.number,
            environment=target.branch,
            dry_sha=merge.dry_sha,
            revert=merge.purpose == "revert",
        )

    @logged("approve")
    def approve(self, strategy: str, environment: str, *, user: str) -> ApproveResult:
        """Approve the environment's open PR as ``user`` (SCMs that take approvals from us)."""
        target, actions = self._apply(
            strategy, environment, lambda s, i: rules.approve(s, i, user=user)
        )
        (action,) = actions
        assert action.kind == "approve"
        return ApproveResult(approved=action.number, environment=target.branch, user=action.user)

    @logged("pin")
    def pin(self, strategy: str, environment: str, *, dry_sha: str, reason: str) -> PinResult:
        target, actions = self._apply(
            strategy,
            environment,
            lambda s, i: rules.pin(s, i, dry_sha=dry_sha, reason=reason, now=utcnow()),
        )
        (action,) = actions
        assert action.kind == "pin"
        assert action.dry_sha is not None
        return PinResult(pinned=action.dry_sha, environment=target.branch, reason=reason)

    @logged("unpin")
    def unpin(self, strategy: str, environment: str) -> UnpinResult:
        target, _ = self._apply(strategy, environment, lambda s, i: rules.unpin(s, i))
        return UnpinResult(unpinned=target.branch)

    @logged("approve-change")
    def approve_change(self, strategy: str, *, dry_sha: str) -> ApproveChangeResult:
        """Let a blocked dry commit through (read through the strategy's first environment)."""
        config = self.rec.config.strategy(strategy)
        if config is None:
            raise OperationError(f"no strategy named {strategy!r}", status=404)
        first = config.environments[0].branch
        target, actions = self._apply(
            strategy,
            first,
            lambda s, i: rules.approve_change(s, dry_sha=dry_sha),
            one_environment=False,
        )
        approved = [a for a in actions if isinstance(a, ApproveChange)]
        branches = tuple(target.snapshot.environments[a.environment].branch for a in approved)
        sha = approved[0].dry_sha if approved else dry_sha
        return ApproveChangeResult(approved=sha, environments=branches)
