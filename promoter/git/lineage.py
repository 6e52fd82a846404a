"""The dry SHA of any hydrated commit, whatever made it: the hydrator, a merge, a revert.

A hydrator names the dry commit of each commit it writes (its note, else its
``hydrator.metadata`` file). Commits on an active branch are made by merges: a merge
commit, a squash, a rebase, a revert. A note-only hydrator (Argo CD's, when nothing
changed) leaves those with no note and no (or a stale) file. They are resolved here,
in this order:

1. the hydrator's note on the commit (it may run ahead of the file);
2. the promoter's own note under ``refs/notes/promoter.lineage``: an earlier answer;
3. a merge commit: its parent with the same tree, else its merged (last) parent;
4. a squash or rebase: the newest commit with the same tree on the proposed branch,
   else in the commit's own history (a revert restores an older tree);
5. the ``hydrator.metadata`` file.

An answer found by 4, or by 3 through a parent that has no answer of its own (a note or
a file), is written as a lineage note and pushed, so that no commit is searched twice,
even after a restart. A merge commit whose parent carries its own answer is found again
with two commit reads, so it is not recorded: a note and a push for every merge would
cost more than finding it again (four git processes and a push to the SCM), and each
push would move the lineage ref, on which every cached answer of the repository depends.
Concurrency: the caller's mirror lock rules; a lineage push that loses a race is
dropped (the next read finds the answer again).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from promoter.errors import GitError, MetadataMissing
from promoter.git.caches import remember
from promoter.git.metadata import NOTES_REF, parse_metadata
from promoter.git.mirror import GitMirror, PushRejected
from promoter.models import HydratorMetadata

LINEAGE_REF = "refs/notes/promoter.lineage"
"""The promoter's notes: the dry SHA it found for a commit that a merge made."""
MAX_DEPTH = 8
"""Merge parents followed at most, one after another."""
SEARCH = 200
"""Commits of a branch's history searched for the same tree."""
OWN_ANSWERS = frozenset({"note", "file"})
"""Sources a commit carries itself (step 1 and 5)."""
NOTED = frozenset({"note", "lineage"})
"""Sources read before any search: the answer does not depend on the proposed tip."""

log = logging.getLogger("promoter.lineage")


@dataclass
class Lineage:
    """Resolves dry SHAs through one mirror at a time; answers cached by immutable inputs."""

    record: bool = True
    """Write and push a lineage note for an answer found by search."""
    _cache: dict[tuple[str, ...], HydratorMetadata | MetadataMissing] = field(default_factory=dict)
    _own: dict[tuple[str, ...], HydratorMetadata] = field(default_factory=dict)
    """Answers a commit's note gave (its hydrator's or a lineage note): the same whatever
    branch it is read through (the active and proposed branches of an environment
    with nothing to promote point at one commit)."""
    _parsed: dict[tuple[str, str], HydratorMetadata] = field(default_factory=dict)
    """Notes parsed, by text and source: every environment's commit of one dry commit
    carries the same hydrator note, so a few texts serve thousands of commits."""

    def metadata(
        self, mirror: GitMirror, sha: str, *, proposed_tip: str | None = None
    ) -> HydratorMetadata:
        """The metadata of hydrated commit ``sha``; ``MetadataMissing`` when none is found.

        ``proposed_tip`` (for an active commit) is where a squash or rebase is looked for.
        """
        own = (
            mirror.name,
            sha,
            mirror.branch_sha(NOTES_REF) or "",
            mirror.branch_sha(LINEAGE_REF) or "",
        )
        found: HydratorMetadata | MetadataMissing | None = self._own.get(own)
        if found is None:
            key = (*own, proposed_tip or "")
            found = self._cache.get(key)
            if found is None:
                with mirror.lock:
                    found = self._resolve(mirror, sha, proposed_tip, 0)
                if isinstance(found, HydratorMetadata) and found.source in NOTED:
                    remember(self._own, own, found, 4096)
                else:
                    remember(self._cache, key, found, 4096)
        if isinstance(found, MetadataMissing):
            raise MetadataMissing(str(found))
        return found

    def _resolve(
        self, mirror: GitMirror, sha: str, proposed_tip: str | None, depth: int
    ) -> HydratorMetadata | MetadataMissing:
        for ref, source in ((NOTES_REF, "note"), (LINEAGE_REF, "lineage")):
            text = mirror.read_note(ref, sha)
            if text is not None:
                parsed = self._parse(text, source, sha)
                if isinstance(parsed, HydratorMetadata):
                    return parsed
                if source == "note":
                    return mirror_metadata(mirror, sha)  # as before: the note's problem
        found = self._search(mirror, sha, proposed_tip, depth)
        if found is not None:
            via, how, resolved = found
            metadata = resolved.model_copy(update={"source": how})
            if self.record and _worth_recording(how, resolved):
                self._record(mirror, sha, metadata, via=via, how=how)
            return metadata
        return mirror_metadata(mirror, sha)

    def _parse(self, text: str, source: str, sha: str) -> HydratorMetadata | MetadataMissing:
        found = self._parsed.get((text, source))
        if found is None:
            try:
                found = parse_metadata(text, source=source, where=sha)
            except MetadataMissing as exc:
                return exc  # its message names the commit: not shared
            remember(self._parsed, (text, source), found, 4096)
        return found

    def _search(
        self, mirror: GitMirror, sha: str, proposed_tip: str | None, depth: int
    ) -> tuple[str, str, HydratorMetadata] | None:
        """Steps 3 and 4: ``(commit it came from, how, that commit's own answer)``, or None."""
        if depth >= MAX_DEPTH:
            return None
        commit = mirror.commit_parents(sha)
        if commit is None:
            return None
        tree, parents = commit
        if len(parents) > 1:
            same = [p for p in parents if _tree(mirror, p) == tree]
            via = same[0] if same else parents[-1]
            return _answer(via, "merge", self._resolve(mirror, via, proposed_tip, depth + 1))
        histories = [proposed_tip] if proposed_tip else []
        histories += parents[:1]
        for tip in histories:
            for candidate, candidate_tree in mirror.tree_history(tip, SEARCH):
                if candidate_tree == tree and candidate != sha:
                    resolved = self._resolve(mirror, candidate, None, depth + 1)
                    answer = _answer(candidate, "same-tree", resolved)
                    if answer is not None:
                        return answer
        return None

    @staticmethod
    def _record(
        mirror: GitMirror, sha: str, metadata: HydratorMetadata, *, via: str, how: str
    ) -> None:
        text = json.dumps({"drySha": metadata.dry_sha, "via": via, "how": how}) + "\n"
        before = mirror.branch_sha(LINEAGE_REF)
        try:
            mirror.write_note(LINEAGE_REF, sha, text)
            mirror.push([f"{LINEAGE_REF}:{LINEAGE_REF}"], leases={LINEAGE_REF: before})
        except (PushRejected, GitError) as exc:
            log.info("lineage note not recorded", extra={"sha": sha, "reason": str(exc)})
            return
        log.info("lineage recorded", extra={"sha": sha, "dry_sha": metadata.dry_sha, "how": how})


def mirror_metadata(mirror: GitMirror, sha: str) -> HydratorMetadata | MetadataMissing:
    """The hydrator's own answer (note, else file), or its ``MetadataMissing``."""
    try:
        return mirror.metadata(sha)
    except MetadataMissing as exc:
        return exc


def _tree(mirror: GitMirror, sha: str) -> str | None:
    commit = mirror.commit_parents(sha)
    return commit[0] if commit else None


def _answer(
    via: str, how: str, resolved: HydratorMetadata | MetadataMissing
) -> tuple[str, str, HydratorMetadata] | None:
    """``(via, how, what via resolved to)``; None when it resolved to nothing."""
    if isinstance(resolved, MetadataMissing):
        return None
    return via, how, resolved


def _worth_recording(how: str, resolved: HydratorMetadata) -> bool:
    """Whether an answer is kept as a lineage note: not a merge commit's whose parent
    answers for itself (found again at the price of reading the two commits)."""
    return how != "merge" or resolved.source not in OWN_ANSWERS
