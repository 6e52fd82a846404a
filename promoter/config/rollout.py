"""Rollout shapes beyond a line: ``dependsOn`` between environments, and tiers.

Environments form a DAG. Without ``dependsOn`` anywhere, the list order is a line (each
environment depends on the one before it). ``tiers`` is a shorthand: each environment of
a tier depends on the tier before it, with a quorum (``require``), a limit on parallel
promotions (``maxParallel``) and an optional notice period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field, field_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration

_PERCENT = re.compile(r"^(\d{1,3})%$")


class Notice(Spec):
    """Announce a change eligible for a tier, and merge it only after ``lead``."""

    lead: Duration = Field(description="How long after the announcement it may merge.")


class Tier(Spec):
    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
    environments: list[str] = Field(min_length=1, description="Environment branches.")
    require: int | str = Field(
        default="all",
        description="How many of this tier's environments must run a change healthy before "
        "the next tier starts: all, a number, or a percentage like 50%.",
    )
    max_parallel: int | None = Field(
        default=None, ge=1, description="At most this many of the tier's PRs merge at once."
    )
    notice: Notice | None = None

    @field_validator("require")
    @classmethod
    def _require(cls, value: int | str) -> int | str:
        if isinstance(value, int):
            if value < 1:
                raise ValueError("require at least 1 environment")
            return value
        if value == "all" or (
            (match := _PERCENT.match(value)) is not None and 0 < int(match.group(1)) <= 100
        ):
            return value
        raise ValueError("require is all, a number, or a percentage like 50%")

    def required(self) -> int:
        """How many of the tier's environments ``require`` means."""
        size = len(self.environments)
        if self.require == "all":
            return size
        if isinstance(self.require, int):
            return min(self.require, size)
        percent = int(self.require.rstrip("%"))
        return max(1, -(-size * percent // 100))


class BlockedChanges(Spec):
    """Dry commits carrying ``trailer`` stop before ``fromTier`` until a person approves
    them with ``promoter approve-change``."""

    trailer: str = "Promote-Block"
    label: str | None = Field(
        default=None, description="A label on a promotion PR that blocks it the same way."
    )
    from_tier: str = Field(description="The first tier the blocked change may not enter.")


@dataclass(frozen=True)
class Upstream:
    """Environment branches of which ``require`` must run a change healthy first."""

    branches: tuple[str, ...]
    require: int


def check_dag(upstreams: dict[str, list[Upstream]]) -> list[str]:
    """Problems with the graph ``branch -> upstream groups``: unknown names and cycles."""
    problems = [
        f"{branch} depends on {name}, which is not an environment of this strategy"
        for branch, groups in upstreams.items()
        for group in groups
        for name in group.branches
        if name not in upstreams
    ]
    if problems:
        return problems
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(branch: str, path: list[str]) -> list[str]:
        if state.get(branch) == 2:
            return []
        if state.get(branch) == 1:
            cycle = [*path[path.index(branch) :], branch]
            return [f"environments depend on each other in a cycle: {' -> '.join(cycle)}"]
        state[branch] = 1
        for group in upstreams[branch]:
            for name in group.branches:
                found = visit(name, [*path, branch])
                if found:
                    return found
        state[branch] = 2
        return []

    for branch in upstreams:
        found = visit(branch, [])
        if found:
            return found
    return []
