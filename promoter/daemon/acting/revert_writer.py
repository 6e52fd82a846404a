"""Writes a revert: one commit on top of the active branch whose tree is the last
healthy hydrated tree, its hydrator note (the healthy dry SHA plus ``revertOf``),
the branch ``<branch>-revert-<short bad SHA>``, and the revert pull request.

Idempotent after a crash: a revert branch that already holds the healthy tree is
reused, and opening the PR returns the one already open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from promoter import markup
from promoter.config import Repository
from promoter.engine import REVERT_LABEL, EnvironmentSnapshot, OpenRevert, short_sha
from promoter.errors import MetadataMissing
from promoter.git import NOTES_REF, GitMirror, render_metadata
from promoter.git.lineage import mirror_metadata
from promoter.models import HydratorMetadata, PullRequest
from scm_plugins.protocol import ScmPlugin


def revert_branch(env: EnvironmentSnapshot, action: OpenRevert) -> str:
    return f"{env.branch}-revert-{short_sha(action.bad_hydrated_sha)}"


def revert_body(env: EnvironmentSnapshot, action: OpenRevert) -> str:
    restore = action.restore
    return "\n".join(
        [
            f"## Revert {env.branch} to `{short_sha(restore.dry_sha)}`",
            "",
            f"**What failed:** {markup.markdown(action.reason)}.",
            f"**Running now:** dry `{short_sha(action.bad_dry_sha)}`"
            f" (hydrated `{short_sha(action.bad_hydrated_sha)}`).",
            f"**Restores:** dry `{short_sha(restore.dry_sha)}` (hydrated"
            f" `{short_sha(restore.hydrated_sha)}`), healthy since"
            f" {restore.healthy_since:%Y-%m-%d %H:%M:%S} UTC.",
            "",
            f"`{short_sha(action.bad_dry_sha)}` is held in {env.branch} and every later"
            " environment until a dry commit that descends from it arrives, or a person"
            " releases it (`promoter release`).",
            "",
            f"<!-- promoter:revert {json.dumps({'badDrySha': action.bad_dry_sha})} -->",
        ]
    )


@dataclass
class RevertWriter:
    plugin: ScmPlugin

    def write(
        self, repo: Repository, mirror: GitMirror, env: EnvironmentSnapshot, action: OpenRevert
    ) -> tuple[str, str, PullRequest]:
        """Push the revert commit and open its PR; (branch, revert commit SHA, PR)."""
        assert env.active is not None
        branch = revert_branch(env, action)
        with mirror.lock:
            tree = mirror.tree_sha(action.restore.hydrated_sha)
            existing = mirror.branch_sha(branch)
            if existing is not None and mirror.tree_sha(existing) == tree:
                commit = existing
            else:
                commit = self._push_commit(mirror, env, action, branch, tree, existing)
        pr = self.plugin.open_pull_request(
            repo=repo,
            head=branch,
            base=env.branch,
            title=f"Revert {env.branch} to {short_sha(action.restore.dry_sha)}",
            body=revert_body(env, action),
            labels=(REVERT_LABEL, env.branch.rsplit("/", 1)[-1]),
        )
        return branch, commit, pr

    @staticmethod
    def _push_commit(
        mirror: GitMirror,
        env: EnvironmentSnapshot,
        action: OpenRevert,
        branch: str,
        tree: str,
        existing: str | None,
    ) -> str:
        assert env.active is not None
        message = (
            f"Revert {env.branch} to {short_sha(action.restore.dry_sha)}\n\n"
            f"{action.reason}. Restores the tree of {short_sha(action.restore.hydrated_sha)}.\n"
        )
        commit = mirror.commit_tree(tree, [env.active.hydrated_sha], message)
        healthy = mirror_metadata(mirror, action.restore.hydrated_sha)
        if isinstance(healthy, MetadataMissing):  # a merge's commit: no text to copy
            healthy = HydratorMetadata(dry_sha=action.restore.dry_sha)
        note = json.loads(
            render_metadata(
                dry_sha=action.restore.dry_sha,
                repo_url=healthy.repo_url,
                author=healthy.author,
                date=healthy.date,
                subject=healthy.subject,
                body=healthy.body,
            )
        )
        note["revertOf"] = action.bad_dry_sha
        notes_before = mirror.refs().get(NOTES_REF)
        mirror.write_note(NOTES_REF, commit, json.dumps(note, indent=2) + "\n")
        mirror.push(
            [f"{commit}:refs/heads/{branch}", f"{NOTES_REF}:{NOTES_REF}"],
            leases={f"refs/heads/{branch}": existing, NOTES_REF: notes_before},
        )
        return commit
