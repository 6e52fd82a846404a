"""The dry SHA of a commit a merge made (merge, squash, rebase, revert), and Argo CD's formats.

Argo CD's formats are built here from its Go types (argoproj/argo-cd,
``util/hydrator/hydrator.go`` ``HydratorCommitMetadata``, ``commitserver/commit``
``CommitNote``, ``pkg/apis/application/v1alpha1`` ``CommitMetadata``): the root file has
``repoURL, drySha, author, date, subject, body, references``, empty fields left out;
an application's file has ``repoURL, drySha, commands``; the note is ``{"drySha": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.errors import MetadataMissing
from promoter.git import METADATA_FILE, GitMirror
from promoter.git.lineage import LINEAGE_REF, Lineage
from tests.gitrepo import GitSandbox

DRY = ["1" * 40, "2" * 40, "3" * 40, "4" * 40]
NEXT, ACTIVE = "environment/dev-next", "environment/dev"


def argocd_root(dry: str) -> str:
    document = {
        "repoURL": "https://github.com/example/gitops.git",
        "drySha": dry,
        "author": "Ada Lovelace <ada@example.invalid>",
        "date": "2025-05-01T12:00:00Z",
        "subject": "Bump guestbook",
        "body": "Longer text.\n\nSigned-off-by: Ada",
        "references": [
            {
                "commit": {
                    "author": "Ada Lovelace <ada@example.invalid>",
                    "date": "2025-05-01T11:00:00Z",
                    "subject": "Build 42",
                    "body": "",
                    "sha": "9" * 40,
                    "repoUrl": "https://github.com/example/app.git",
                }
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def argocd_app(dry: str) -> str:
    document = {
        "repoURL": "https://github.com/example/gitops.git",
        "drySha": dry,
        "commands": ["helm template . --name-template guestbook"],
    }
    return json.dumps(document, indent=2) + "\n"


def note(dry: str) -> str:
    return json.dumps({"drySha": dry}, separators=(",", ":"))


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"values.yaml": "v: 1\n"}, "Dry")
    return sandbox


@pytest.fixture
def mirror(tmp_path: Path, remote: GitSandbox) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as m:
        yield m


def hydrate(remote: GitSandbox, version: int, *, with_file: bool = False) -> str:
    """A note-only hydrator's commit on -next (with Argo CD's files when ``with_file``)."""
    files: dict[str, str | None] = {"guestbook/manifest.yaml": f"image: guestbook:{version}\n"}
    if with_file:
        files[METADATA_FILE] = argocd_root(DRY[version])
        files[f"guestbook/{METADATA_FILE}"] = argocd_app(DRY[version])
    sha = remote.commit(NEXT, files, f"hydrate {version}")
    remote.note(sha, note(DRY[version]))
    return sha


def start(remote: GitSandbox) -> None:
    remote.set_branch(ACTIVE, hydrate(remote, 0))


def squash(remote: GitSandbox, head: str) -> str:
    active = remote.branch_sha(ACTIVE)
    assert active is not None
    sha = remote.git("commit-tree", f"{head}^{{tree}}", "-p", active, "-m", "squash")
    remote.set_branch(ACTIVE, sha)
    return sha


def merge(remote: GitSandbox, head: str) -> str:
    active = remote.branch_sha(ACTIVE)
    assert active is not None
    sha = remote.git("commit-tree", f"{head}^{{tree}}", "-p", active, "-p", head, "-m", "merge")
    remote.set_branch(ACTIVE, sha)
    return sha


def resolve(mirror: GitMirror, sha: str, lineage: Lineage | None = None) -> tuple[str, str]:
    mirror.refresh()
    found = (lineage or Lineage()).metadata(mirror, sha, proposed_tip=mirror.branch_sha(NEXT))
    return found.dry_sha, found.source


def test_a_merge_commit_with_no_note_and_no_file_is_on_its_merged_parent_unrecorded(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    """Its merged parent answers for itself (a note): found again from the two commits,
    after a restart too, so no lineage note is written or pushed."""
    start(remote)
    merged = merge(remote, hydrate(remote, 1))
    assert resolve(mirror, merged) == (DRY[1], "merge")
    assert remote.branch_sha(LINEAGE_REF) is None
    assert resolve(mirror, merged, Lineage()) == (DRY[1], "merge")


def test_a_squash_merge_is_on_the_proposed_commit_with_the_same_tree(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    start(remote)
    squashed = squash(remote, hydrate(remote, 1))
    hydrate(remote, 2)  # the hydrator went on: the squashed tree is further back
    assert resolve(mirror, squashed) == (DRY[1], "same-tree")


def test_without_lineage_a_merge_commit_of_a_note_only_hydrator_is_an_error(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    start(remote)
    merged = merge(remote, hydrate(remote, 1))
    mirror.refresh()
    with pytest.raises(MetadataMissing, match="no hydrator note"):
        mirror.metadata(merged)


def test_a_revert_commit_is_on_its_own_note(mirror: GitMirror, remote: GitSandbox) -> None:
    start(remote)
    merge(remote, hydrate(remote, 1))
    revert = remote.commit(ACTIVE, {"guestbook/manifest.yaml": "image: guestbook:0\n"}, "revert")
    remote.note(revert, json.dumps({"drySha": DRY[0], "revertOf": DRY[1]}))
    assert resolve(mirror, revert) == (DRY[0], "note")


def test_an_answer_found_by_search_is_recorded_and_never_searched_again(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    start(remote)
    squashed = squash(remote, hydrate(remote, 1))
    assert resolve(mirror, squashed) == (DRY[1], "same-tree")
    recorded = json.loads(remote.read_note(squashed, ref=LINEAGE_REF) or "{}")
    assert recorded["drySha"] == DRY[1] and recorded["how"] == "same-tree"
    empty = remote.git("mktree", stdin="")  # -next rewritten: the same tree is gone
    remote.set_branch(NEXT, remote.git("commit-tree", empty, "-m", "rewritten"))
    assert resolve(mirror, squashed, Lineage()) == (DRY[1], "lineage")


def ours(remote: GitSandbox, other: str) -> str:
    """A merge that keeps the active tree (``-s ours``): it answers through the active
    parent, which has no answer of its own when it is a merge itself."""
    active = remote.branch_sha(ACTIVE)
    assert active is not None
    sha = remote.git("commit-tree", f"{active}^{{tree}}", "-p", active, "-p", other, "-m", "ours")
    remote.set_branch(ACTIVE, sha)
    return sha


def test_merges_through_merges_are_recorded_so_a_long_run_of_them_stays_resolvable(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    start(remote)
    lineage = Lineage()
    merges = []
    for version in range(1, 13):  # more than MAX_DEPTH merges, each read as it lands
        merges.append(ours(remote, hydrate(remote, 1 + version % 3)))
        assert resolve(mirror, merges[-1], lineage)[0] == DRY[0]
    assert remote.read_note(merges[0], ref=LINEAGE_REF) is None  # its parent has a note
    recorded = [json.loads(remote.read_note(m, ref=LINEAGE_REF) or "{}") for m in merges[1:]]
    assert [(r["drySha"], r["how"]) for r in recorded] == [(DRY[0], "merge")] * 11
    assert resolve(mirror, merges[-1], Lineage()) == (DRY[0], "lineage")


def test_argocd_files_are_read_and_its_note_runs_ahead_of_them(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    start(remote)
    tip = hydrate(remote, 1, with_file=True)
    copy = remote.git("commit-tree", f"{tip}^{{tree}}", "-m", "no note, Argo CD's files")
    remote.set_branch("copy", copy)
    mirror.refresh()
    from_file = mirror.metadata(copy)
    assert from_file.dry_sha == DRY[1]
    assert from_file.author == "Ada Lovelace <ada@example.invalid>"
    assert from_file.repo_url == "https://github.com/example/gitops.git"
    remote.note(tip, note(DRY[2]))  # dry commit 2 rendered the same manifests: no commit
    assert resolve(mirror, tip) == (DRY[2], "note")
    merged = merge(remote, tip)
    assert resolve(mirror, merged) == (DRY[2], "merge")


def test_a_commit_read_through_both_branches_of_an_environment_is_resolved_once(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to promote: the active and proposed branches point at one commit, which its
    note answers for whatever the proposed tip."""
    start(remote)
    sha = remote.branch_sha(ACTIVE)
    assert sha is not None and sha == remote.branch_sha(NEXT)
    mirror.refresh()
    reads: list[str] = []
    real = mirror.read_note

    def counted(ref: str, commit: str) -> str | None:
        reads.append(commit)
        return real(ref, commit)

    monkeypatch.setattr(mirror, "read_note", counted)
    lineage = Lineage()
    active = lineage.metadata(mirror, sha, proposed_tip=sha)
    proposed = lineage.metadata(mirror, sha)
    assert active == proposed and active.source == "note" and active.dry_sha == DRY[0]
    assert reads == [sha]
