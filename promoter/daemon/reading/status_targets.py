"""Which commits a commit status counts on, so that ``set-status`` never succeeds silently.

A key counts on one commit per environment that reads it: an active key (``health``, an
Argo CD or Flux gate) on the hydrated commit the environment runs, the tip of its branch;
a proposed key (``ci``, an HTTP check) on the head of its proposed branch, its PR's head.
A status on any other commit (the dry SHA, a superseded head, a commit of another branch)
is read by nobody: ``StatusNotRead`` names the commits that would count.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from promoter.config import Config, PromotionStrategy
from promoter.errors import StatusNotRead
from promoter.git import GitMirror

SHOWN = 6
"""Commits named in a refusal at most; the rest are counted."""


@dataclass(frozen=True)
class Target:
    """A commit a key counts on, and what it is to the environment that reads it."""

    sha: str
    what: str


def targets(
    config: Config,
    repo_name: str,
    key: str,
    mirror: GitMirror,
    names: Collection[str] | None = None,
) -> list[Target]:
    """Every commit of ``repo_name`` a status ``key`` counts on now, from the mirror's refs
    (only for the strategies ``names``, when given)."""
    found: list[Target] = []
    for strategy in config.promotion_strategies:
        if strategy.repository == repo_name and (names is None or strategy.name in names):
            found.extend(_of(strategy, key, mirror))
    return found


def _of(strategy: PromotionStrategy, key: str, mirror: GitMirror) -> Iterable[Target]:
    for env in strategy.environments:
        gates = tuple(strategy.gates_of(env))
        active = (*strategy.active_keys(env), *(g.key for g in gates if g.active))
        proposed = (*strategy.proposed_keys(env), *(g.key for g in gates if g.http is not None))
        if key in active:
            tip = mirror.branch_sha(env.branch)
            if tip is not None:
                yield Target(tip, f"the commit {env.branch} runs")
        if key in proposed:
            head = strategy.proposed_branch(env)
            tip = mirror.branch_sha(head)
            if tip is not None:
                yield Target(tip, f"the head of {head}, the promotion into {env.branch}")


def check(
    config: Config,
    repo_name: str,
    sha: str,
    key: str,
    mirrors: Iterable[Callable[[], GitMirror]],
    dry_of: Callable[[str], list[str]] = lambda sha: [],
    tracking: Collection[str] = (),
) -> None:
    """Pass when ``key`` on ``sha`` counts for an environment, read through each mirror in
    turn (the known one, then a fresh fetch: the commit may be new); else ``StatusNotRead``.

    ``tracking`` names the strategies known to read ``sha``: asked first, so the common
    case (CI reporting on a head a strategy tracks) costs no walk of every strategy.
    ``dry_of(sha)`` says what ``sha`` is when a dry commit ("the dry commit environment/dev
    runs").
    """
    mirrors = list(mirrors)
    if tracking and mirrors:
        known = targets(config, repo_name, key, mirrors[0](), names=tracking)
        if any(t.sha == sha for t in known):
            return
    found: list[Target] = []
    for mirror in mirrors:
        found = targets(config, repo_name, key, mirror())
        if any(t.sha == sha for t in found):
            return
    raise StatusNotRead(refusal(repo_name, sha, key, found, dry_of(sha)))


def refusal(repo_name: str, sha: str, key: str, found: list[Target], dry_in: list[str]) -> str:
    """Why ``key`` on ``sha`` would count for nothing, and where it would."""
    said = f"{key} on {sha[:7]} would count for no environment"
    if dry_in:
        said += f": {sha[:7]} is {' and '.join(dry_in)}"
    if not found:
        return f"{said}; no strategy of {repo_name} reads {key}"
    where = [f"{t.sha[:7]}, {t.what}" for t in found[:SHOWN]]
    more = f", and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return f"{said}; report {key} on {'; or '.join(where)}{more}"
