"""Manual operations a person runs on an environment: revert, hold, release, and the
break-glass promote. Each runs under the strategy's lock (never beside a reconcile
of it), reads fresh, writes the ledger in git, and wakes the strategy afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from promoter.config import PromotionStrategy, Repository
from promoter.engine.actions import (
    Action,
    CommentPullRequest,
    MergePullRequest,
    RecordOverride,
)
from promoter.engine.decide import backwards_reason
from promoter.engine.gates import error_reason
from promoter.engine.ledger_state import EnvLedger, Hold
from promoter.engine.pr_text import merge_message, short
from promoter.engine.revert import manual_revert
from promoter.engine.snapshot import Snapshot
from promoter.errors import PermanentError
from promoter.git import GitMirror
from promoter.models import utcnow
from promoter.reconciler import Reconciler

log = logging.getLogger("promoter.operations")


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

    @property
    def branch(self) -> str:
        return self.snapshot.environments[self.index].branch

    @property
    def later(self) -> list[str]:
        return [e.branch for e in self.snapshot.environments[self.index :]]


class Operations:
    def __init__(self, reconciler: Reconciler) -> None:
        self.rec = reconciler

    def _target(self, strategy_name: str, environment: str) -> Target:
        strategy = self.rec.config.strategy(strategy_name)
        if strategy is None:
            raise OperationError(f"no strategy named {strategy_name!r}", status=404)
        branches = [e.branch for e in strategy.environments]
        index = next(
            (i for i, b in enumerate(branches) if environment in (b, b.rsplit("/", 1)[-1])), None
        )
        if index is None:
            raise OperationError(
                f"{strategy_name} has no environment {environment!r}"
                f" (it has {', '.join(branches)})",
                status=404,
            )
        repo = self.rec.config.repository(strategy.repository)
        mirror = self.rec.mirrors.fresh(repo)
        reader = self.rec.reader(strategy.name, self.rec.plugin_for(repo))
        snapshot = reader.read(strategy, repo, mirror)
        return Target(strategy, repo, mirror, snapshot, index)

    def _run(self, target: Target, actions: list[Action]) -> None:
        plugin = self.rec.plugin_for(target.repo)
        executor = self.rec.executor(plugin, self.rec.reader(target.strategy.name, plugin))
        executor.run(target.snapshot, target.repo, target.mirror, tuple(actions))

    def _update(self, target: Target, branch: str, change: Any) -> EnvLedger:
        ledger = self.rec.ledger.update(target.mirror, target.strategy.name, branch, change)
        return ledger

    # --- the operations --------------------------------------------------------------

    def hold(
        self, strategy: str, environment: str, *, dry_sha: str | None, reason: str
    ) -> dict[str, Any]:
        if not reason.strip():
            raise OperationError("a hold needs a reason", status=422)
        with self.rec.key_lock(strategy):
            target = self._target(strategy, environment)
            env = target.snapshot.environments[target.index]
            sha = dry_sha or (env.proposed.dry_sha if env.proposed else None)
            if sha is None:
                raise OperationError(
                    f"nothing is proposed for {env.branch}; give --dry-sha", status=422
                )
            sha = self._full(target, sha)
            hold = Hold(
                dry_sha=sha, reason=f"held by a person: {reason}", since=utcnow(), source="manual"
            )
            for branch in target.later:
                self._update(target, branch, lambda led: led.with_hold(hold))
        log.warning(
            "hold set",
            extra={
                "strategy": strategy,
                "environment": target.branch,
                "sha": sha,
                "reason": reason,
            },
        )
        return {"held": sha, "environments": target.later, "reason": reason}

    def release(self, strategy: str, environment: str, *, dry_sha: str | None) -> dict[str, Any]:
        with self.rec.key_lock(strategy):
            target = self._target(strategy, environment)
            env = target.snapshot.environments[target.index]
            shas = (
                [self._full(target, dry_sha)] if dry_sha else [h.dry_sha for h in env.ledger.holds]
            )
            for branch in target.later:

                def change(led: EnvLedger, first: bool = branch == target.branch) -> EnvLedger:
                    for sha in shas:
                        led = led.without_holds(sha)
                    if not first:
                        return led
                    return led.model_copy(update={"paused": None, "released_at": utcnow()})

                self._update(target, branch, change)
        log.warning(
            "hold released",
            extra={"strategy": strategy, "environment": target.branch, "shas": shas},
        )
        return {"released": shas, "environments": target.later, "unpaused": target.branch}

    def revert(self, strategy: str, environment: str, *, to: str | None) -> dict[str, Any]:
        with self.rec.key_lock(strategy):
            target = self._target(strategy, environment)
            env_config = target.strategy.environments[target.index]
            action = manual_revert(
                target.snapshot, target.index, to=to, auto_merge=env_config.auto_revert.auto_merge
            )
            if isinstance(action, str):
                raise OperationError(action)
            self._run(target, [action])
        return {
            "reverting": target.branch,
            "to": action.restore.dry_sha,
            "from": action.bad_dry_sha,
        }

    def promote(self, strategy: str, environment: str, *, reason: str) -> dict[str, Any]:
        """Break glass: merge now past every gate but never-backwards; kept in the ledger."""
        if not reason.strip():
            raise OperationError("a break-glass promotion needs a reason", status=422)
        with self.rec.key_lock(strategy):
            target = self._target(strategy, environment)
            snapshot, index = target.snapshot, target.index
            env = snapshot.environments[index]
            problem = error_reason(env)
            if problem is not None:
                raise OperationError(problem)
            if env.proposed is None or env.active is None:
                raise OperationError(f"nothing is proposed for {env.branch}")
            proposed, active = env.proposed.dry_sha, env.active.dry_sha
            assert proposed is not None and active is not None
            if proposed == active:
                raise OperationError(f"{env.branch} already runs {short(proposed)}")
            backwards = backwards_reason(snapshot, index, proposed)
            if backwards is not None:
                raise OperationError(backwards)
            plugin = self.rec.plugin_for(target.repo)
            pr = env.pull_request or plugin.open_pull_request(
                repo=target.repo,
                head=env.proposed_branch,
                base=env.branch,
                title=f"Promote {short(proposed)} to {env.branch}",
                body=f"Break-glass promotion: {reason}",
                labels=("promotion", env.branch.rsplit("/", 1)[-1]),
            )
            if pr.head_sha != env.proposed.hydrated_sha:
                raise OperationError(
                    f"pull request #{pr.number} is behind {env.proposed_branch}; try again"
                )
            now = utcnow()
            self._run(
                target,
                [
                    CommentPullRequest(
                        environment=index,
                        number=pr.number,
                        body=f"Break-glass promotion past the gates: {reason}",
                    ),
                    MergePullRequest(
                        environment=index,
                        number=pr.number,
                        expected_head_sha=env.proposed.hydrated_sha,
                        dry_sha=proposed,
                        message=merge_message(
                            strategy=snapshot.strategy,
                            branch=env.branch,
                            dry_sha=proposed,
                            number=pr.number,
                        ),
                        purpose="override",
                    ),
                    RecordOverride(environment=index, dry_sha=proposed, reason=reason, at=now),
                ],
            )
        log.warning(
            "break-glass promotion",
            extra={
                "strategy": strategy,
                "environment": env.branch,
                "sha": proposed,
                "reason": reason,
            },
        )
        return {"promoted": proposed, "environment": env.branch, "pr": pr.number}

    @staticmethod
    def _full(target: Target, sha: str) -> str:
        """A full dry SHA from a prefix the person typed, among the SHAs the snapshot knows."""
        sha = sha.lower()
        known = {
            s
            for env in target.snapshot.environments
            for s in (
                env.active.dry_sha if env.active else None,
                env.proposed.dry_sha if env.proposed else None,
                *(h.dry_sha for h in env.ledger.holds),
                *(r.dry_sha for r in env.ledger.healthy),
            )
            if s
        }
        matches = [s for s in known if s.startswith(sha)]
        if len(matches) == 1:
            return matches[0]
        if len(sha) == 40:
            return sha
        raise OperationError(
            f"{sha} does not name one known dry commit; give the full SHA", status=422
        )
