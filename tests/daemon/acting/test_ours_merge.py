"""The "ours" merge onto -next through the mirror: the proposed tree kept, a racing push kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.daemon.acting.mergeable import merge_active_into_proposed
from promoter.engine import MergeActiveIntoProposed
from promoter.git import GitMirror
from tests.gitrepo import GitSandbox

NEXT, ACTIVE = "environment/dev-next", "environment/dev"


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    base = sandbox.commit(NEXT, {"manifest.yaml": "v: 1\n"}, "hydrate 1")
    sandbox.set_branch(ACTIVE, base)
    sandbox.commit(NEXT, {"manifest.yaml": "v: 2\n"}, "hydrate 2")
    sandbox.commit(ACTIVE, {"manifest.yaml": "v: 0\n"}, "revert to 0")
    return sandbox


@pytest.fixture
def mirror(tmp_path: Path, remote: GitSandbox) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as m:
        m.refresh()
        yield m


def action(mirror: GitMirror) -> MergeActiveIntoProposed:
    proposed, active = mirror.branch_sha(NEXT), mirror.branch_sha(ACTIVE)
    assert proposed is not None and active is not None
    return MergeActiveIntoProposed(
        environment=0,
        proposed_branch=NEXT,
        proposed_sha=proposed,
        active_branch=ACTIVE,
        active_sha=active,
        tree_sha=mirror.tree_sha(proposed),
    )


def test_a_conflicting_proposal_becomes_mergeable_with_its_own_tree(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    fix = action(mirror)
    assert mirror.merge_tree(fix.proposed_sha, fix.active_sha)[0] is False
    merge = merge_active_into_proposed(mirror, fix, strategy="demo")
    assert merge is not None and remote.branch_sha(NEXT) == merge
    assert remote.git("rev-list", "--parents", "-n1", merge).split()[1:] == [
        fix.proposed_sha,
        fix.active_sha,
    ]
    assert remote.git("rev-parse", f"{merge}^{{tree}}") == fix.tree_sha
    mirror.refresh()
    clean, tree = mirror.merge_tree(fix.active_sha, merge)
    assert clean and tree == fix.tree_sha


def test_a_hydrator_push_that_raced_the_merge_is_never_lost(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    fix = action(mirror)
    raced = remote.commit(NEXT, {"manifest.yaml": "v: 3\n"}, "hydrate 3")
    assert merge_active_into_proposed(mirror, fix, strategy="demo") is None
    assert remote.branch_sha(NEXT) == raced
