"""Checks on what a run left behind: the environment branches' histories and the PRs opened.

Each check returns a list of problems in plain words (empty when all is well), so
that a failing test shows every problem at once. Histories are read from the bare
repository with a few batched git commands; a hydrated commit's dry SHA comes from
its hydrator note, else from the ``hydrator.metadata`` file of its tree (a merge
commit's tree is its PR head's, so it names the dry SHA it promoted).
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from promoter.cli.sandbox import git
from promoter.git import METADATA_FILE, NOTES_REF
from promoter.models import PullRequest


@dataclass(frozen=True)
class Step:
    """One commit on an environment branch's first-parent line."""

    sha: str
    dry_sha: str
    committed: int
    """Committer time, in seconds."""
    merged_head: str | None
    """The second parent of a merge commit: the PR head that was merged."""


@dataclass(frozen=True)
class PrRecord:
    """A pull request as any SCM reports it, reduced to what the checks need."""

    number: int
    head: str
    base: str
    head_sha: str
    state: str
    merge_sha: str | None = None

    @classmethod
    def of(cls, pr: PullRequest) -> PrRecord:
        return cls(
            pr.number, pr.head_branch, pr.base_branch, pr.head_sha, pr.state.value, pr.merge_sha
        )


def _batch(repo: Path, names: Iterable[str]) -> dict[str, bytes | None]:
    """``git cat-file --batch`` for many object names at once: name -> content (None: missing)."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    out = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input="".join(f"{n}\n" for n in wanted).encode(),
        capture_output=True,
        check=True,
    ).stdout
    found: dict[str, bytes | None] = {}
    pos = 0
    for name in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            found[name] = None
            continue
        size = int(header[2])
        found[name] = out[pos : pos + size]
        pos += size + 1
    return found


class History:
    """The histories of a bare GitOps repository's branches, with each commit's dry SHA."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._dry: dict[str, str] = {}
        self._ancestry: dict[tuple[str, str], bool] = {}

    def tip(self, branch: str) -> str:
        return git(self.repo, "rev-parse", f"refs/heads/{branch}")

    def dry_shas(self, shas: Sequence[str]) -> list[str]:
        """The dry SHA of each hydrated (or merge) commit: note first, then the file."""
        missing = [s for s in shas if s not in self._dry]
        if missing:
            listed = git(self.repo, "notes", f"--ref={NOTES_REF}", "list")
            notes = {obj: note for note, obj in (line.split() for line in listed.splitlines())}
            blobs = _batch(
                self.repo,
                [notes[s] for s in missing if s in notes]
                + [f"{s}:{METADATA_FILE}" for s in missing],
            )
            for sha in missing:
                data = blobs.get(notes.get(sha, "")) or blobs.get(f"{sha}:{METADATA_FILE}")
                assert data is not None, f"{sha} names no dry commit"
                self._dry[sha] = json.loads(data)["drySha"]
        return [self._dry[s] for s in shas]

    def dry_sha(self, sha: str) -> str:
        return self.dry_shas([sha])[0]

    def active_dry(self, branch: str) -> str:
        return self.dry_sha(self.tip(branch))

    def runs(self, branch: str, dry_sha: str) -> bool:
        """Whether environment ``branch`` runs dry commit ``dry_sha`` now."""
        return self.active_dry(branch) == dry_sha

    def steps(self, branch: str) -> list[Step]:
        """The first-parent line of ``branch``, oldest first."""
        lines = git(
            self.repo, "log", "--first-parent", "--reverse", "--format=%H %ct %P", branch
        ).splitlines()
        rows = [line.split() for line in lines]
        drys = self.dry_shas([row[0] for row in rows])
        return [
            Step(row[0], dry, int(row[1]), row[3] if len(row) > 3 else None)
            for row, dry in zip(rows, drys, strict=True)
        ]

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        key = (ancestor, descendant)
        if key not in self._ancestry:
            result = subprocess.run(
                ["git", "-C", str(self.repo), "merge-base", "--is-ancestor", *key],
                capture_output=True,
                check=False,
            )
            self._ancestry[key] = result.returncode == 0
        return self._ancestry[key]


def dry_order_problems(history: History, environments: Sequence[str], dry_branch: str) -> list[str]:
    """The first-parent history of every environment shows dry SHAs in dry-branch order,
    each previously active in the environment before it."""
    problems: list[str] = []
    dry_tip = history.tip(dry_branch)
    previous: list[Step] | None = None
    previous_branch = ""
    for branch in environments:
        steps = history.steps(branch)
        for step in steps:
            if not history.is_ancestor(step.dry_sha, dry_tip):
                problems.append(
                    f"{branch} {step.sha[:7]} runs {step.dry_sha[:7]}, not on {dry_branch}"
                )
        for older, newer in itertools.pairwise(steps):
            if older.dry_sha == newer.dry_sha or not history.is_ancestor(
                older.dry_sha, newer.dry_sha
            ):
                problems.append(
                    f"{branch} moved from {older.dry_sha[:7]} to {newer.dry_sha[:7]}"
                    f" at {newer.sha[:7]}: not forward in {dry_branch} order"
                )
        if previous is not None:
            for step in steps:
                before = [s for s in previous if s.dry_sha == step.dry_sha]
                if not before:
                    problems.append(
                        f"{branch} ran {step.dry_sha[:7]} ({step.sha[:7]}) which"
                        f" {previous_branch} never ran"
                    )
                elif before[0].committed > step.committed:
                    problems.append(f"{branch} ran {step.dry_sha[:7]} before {previous_branch} did")
        previous, previous_branch = steps, branch
    return problems


def pull_request_problems(
    history: History, prs: Sequence[PrRecord], environments: Sequence[str]
) -> list[str]:
    """No PR was opened twice for one proposal, none is left open, and every merge on an
    environment's first-parent line is exactly one merged PR, whose head it merged."""
    problems: list[str] = []
    by_branches: dict[tuple[str, str], list[PrRecord]] = defaultdict(list)
    for pr in prs:
        by_branches[(pr.head, pr.base)].append(pr)
    for (head, base), group in sorted(by_branches.items()):
        heads = [pr.head_sha for pr in group]
        twice = sorted({h[:7] for h in heads if heads.count(h) > 1})
        if twice:
            numbers = [pr.number for pr in group if pr.head_sha[:7] in twice]
            problems.append(
                f"{head} -> {base}: PRs {numbers} were opened for the same head {twice}"
            )
        still_open = [pr.number for pr in group if pr.state == "open"]
        if still_open:
            problems.append(f"{head} -> {base}: PRs {still_open} are still open")
    merged: dict[str, PrRecord] = {
        pr.merge_sha: pr for pr in prs if pr.state == "merged" and pr.merge_sha
    }
    # A PR merged just before a crash is recorded as merged later, without its merge SHA.
    unrecorded = {
        (pr.base, pr.head_sha): pr for pr in prs if pr.state == "merged" and not pr.merge_sha
    }
    for branch in environments:
        for step in history.steps(branch):
            if step.merged_head is None:
                continue
            found = merged.pop(step.sha, None) or unrecorded.pop((branch, step.merged_head), None)
            if found is None:
                problems.append(f"merge {step.sha[:7]} on {branch} is no merged PR's")
            elif found.head_sha != step.merged_head or found.base != branch:
                problems.append(
                    f"merge {step.sha[:7]} on {branch} merged {step.merged_head[:7]},"
                    f" but PR #{found.number} was {found.head}@{found.head_sha[:7]} -> {found.base}"
                )
    for pr in [*merged.values(), *unrecorded.values()]:
        if pr.base in environments:
            problems.append(f"PR #{pr.number} is merged, but no merge of it is on {pr.base}")
    return problems


def completion_problems(history: History, environments: Sequence[str], dry_sha: str) -> list[str]:
    """Every environment runs ``dry_sha``."""
    return [
        f"{branch} runs {history.active_dry(branch)[:7]}, not {dry_sha[:7]}"
        for branch in environments
        if history.active_dry(branch) != dry_sha
    ]
