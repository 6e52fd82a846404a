"""What the reader asks the mirror about an environment's commits, besides their tips.

Which dry SHAs descend from which (``ancestry``), whether the proposed commit is already
in the active branch (``proposed_in_active``), whether merging them would conflict
(``MergeConflicts``, kept by SHA).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from promoter.engine import CommitState, EnvironmentSnapshot
from promoter.git import GitMirror
from promoter.git.caches import remember


def ancestry(mirror: GitMirror, envs: list[EnvironmentSnapshot]) -> frozenset[tuple[str, str]]:
    """``(ancestor, descendant)`` pairs among the dry SHAs the rules compare.

    Every pair of the environments' active and proposed dry SHAs, plus each
    environment's active against its healthy records (restore points) and its
    proposed against its holds (lifted by a descendant). Answers are cached by
    the mirror, so a pair costs a git call once.
    """
    current = sorted(
        {
            commit.dry_sha
            for env in envs
            for commit in (env.active, env.proposed)
            if commit is not None and commit.dry_sha
        }
    )
    pairs = set(itertools.permutations(current, 2))
    for env in envs:
        if env.active is not None and env.active.dry_sha:
            pairs.update((r.dry_sha, env.active.dry_sha) for r in env.ledger.healthy)
        if env.proposed is not None and env.proposed.dry_sha:
            pairs.update((h.dry_sha, env.proposed.dry_sha) for h in env.ledger.holds)
    return frozenset((a, d) for a, d in pairs if a != d and mirror.is_ancestor(a, d))


def proposed_in_active(
    mirror: GitMirror, active: CommitState | None, proposed: CommitState | None
) -> bool:
    """The proposed hydrated commit is already in the active branch's history."""
    if active is None or proposed is None or active.hydrated_sha == proposed.hydrated_sha:
        return False
    return mirror.is_ancestor(proposed.hydrated_sha, active.hydrated_sha)


@dataclass
class MergeConflicts:
    """Whether a three-way merge of an active tip into a proposed tip conflicts, cached."""

    _known: dict[tuple[str, str, str], bool] = field(default_factory=dict)

    def check(
        self, mirror: GitMirror, active: CommitState | None, proposed: CommitState | None
    ) -> bool:
        if active is None or proposed is None or active.tree_sha == proposed.tree_sha:
            return False
        key = (mirror.name, active.hydrated_sha, proposed.hydrated_sha)
        known = self._known.get(key)
        if known is None:
            if mirror.is_ancestor(active.hydrated_sha, proposed.hydrated_sha) or (
                mirror.is_ancestor(proposed.hydrated_sha, active.hydrated_sha)
            ):
                known = False  # a fast-forward, or nothing to merge
            else:
                known = not mirror.merge_tree(proposed.hydrated_sha, active.hydrated_sha)[0]
            remember(self._known, key, known, 1 << 15)
        return known
