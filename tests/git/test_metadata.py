"""Reading the dry SHA of a hydrated commit: the note first, then the file, never a guess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from promoter.errors import GitError, MetadataMissing
from promoter.git import (
    METADATA_FILE,
    NOTES_REF,
    GitMirror,
    find_note,
    parse_metadata,
    redact,
    render_metadata,
)
from promoter.git.metadata import TREE_MODE, TreeEntries
from tests.gitrepo import GitSandbox

DRY_A = "a" * 40
DRY_B = "b" * 40


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"values.yaml": "v: 1\n"}, "Dry")
    return sandbox


@pytest.fixture
def mirror(tmp_path: Path, remote: GitSandbox) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as m:
        yield m


def hydrated(remote: GitSandbox, metadata: str | None, branch: str = "environment/dev-next") -> str:
    files: dict[str, str | None] = {"deploy.yaml": f"kind: Deployment # {branch}\n"}
    if metadata is not None:
        files[METADATA_FILE] = metadata
    return remote.commit(branch, files, "hydrate")


def test_the_note_beats_the_file(mirror: GitMirror, remote: GitSandbox) -> None:
    sha = hydrated(remote, render_metadata(dry_sha=DRY_A, subject="old"))
    remote.note(sha, json.dumps({"drySha": DRY_B}))
    mirror.refresh()
    metadata = mirror.metadata(sha)
    assert (metadata.dry_sha, metadata.source) == (DRY_B, "note")


def test_the_file_is_read_when_there_is_no_note(mirror: GitMirror, remote: GitSandbox) -> None:
    text = render_metadata(
        dry_sha=DRY_A, repo_url="https://example.invalid/gitops", author="Dev", subject="Bump"
    )
    sha = hydrated(remote, text)
    other = hydrated(remote, None, branch="environment/prod-next")
    remote.note(other, json.dumps({"drySha": DRY_B}))  # a notes ref exists, just not for sha
    mirror.refresh()
    metadata = mirror.metadata(sha.upper())
    assert metadata.source == "file"
    assert (metadata.dry_sha, metadata.subject, metadata.author) == (DRY_A, "Bump", "Dev")
    assert metadata.repo_url == "https://example.invalid/gitops"


def test_a_commit_with_neither_note_nor_file_is_reported_plainly(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    sha = hydrated(remote, None)
    mirror.refresh()
    with pytest.raises(MetadataMissing) as caught:
        mirror.metadata(sha)
    assert str(caught.value) == f"commit {sha} has no hydrator note and no hydrator.metadata file"
    with pytest.raises(MetadataMissing):  # the cached outcome raises again
        mirror.metadata(sha)


def test_an_invalid_note_falls_back_to_the_file(mirror: GitMirror, remote: GitSandbox) -> None:
    sha = hydrated(remote, json.dumps({"drySha": DRY_A}))
    remote.note(sha, "not json {")
    mirror.refresh()
    assert mirror.metadata(sha).dry_sha == DRY_A


@pytest.mark.parametrize(
    ("note", "file", "message"),
    [
        ("not json {", None, "note of .* is not valid JSON"),
        ('{"drySha": "short"}', None, "note of .* has no valid drySha"),
        ('["a list"]', '{"subject": "no sha"}', "not a JSON object; .* file .* no valid drySha"),
    ],
)
def test_invalid_metadata_is_missing_metadata(
    mirror: GitMirror, remote: GitSandbox, note: str, file: str | None, message: str
) -> None:
    sha = hydrated(remote, file)
    remote.note(sha, note)
    mirror.refresh()
    with pytest.raises(MetadataMissing, match=message):
        mirror.metadata(sha)


def test_the_metadata_follows_the_note_when_the_notes_ref_moves(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    sha = hydrated(remote, json.dumps({"drySha": DRY_A}))
    mirror.refresh()
    assert mirror.metadata(sha).source == "file"
    remote.note(sha, json.dumps({"drySha": DRY_B}))
    mirror.refresh()
    assert (mirror.metadata(sha).dry_sha, mirror.metadata(sha).source) == (DRY_B, "note")


def test_the_metadata_of_an_unknown_commit_is_a_git_error(mirror: GitMirror) -> None:
    mirror.refresh()
    with pytest.raises(GitError, match="not in mirror"):
        mirror.metadata("1" * 40)


def fan_out_note(remote: GitSandbox, target: str, text: str, depth: int) -> None:
    """Write a notes commit whose one note sits under ``depth`` levels of fan-out."""
    blob = remote.git("hash-object", "-w", "--stdin", stdin=text)
    tree = remote.git("mktree", stdin=f"100644 blob {blob}\t{target[2 * depth :]}\n")
    for level in reversed(range(depth)):
        tree = remote.git(
            "mktree", stdin=f"040000 tree {tree}\t{target[2 * level : 2 * level + 2]}\n"
        )
    remote.git("update-ref", NOTES_REF, remote.git("commit-tree", tree, "-m", "Notes added"))


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_notes_under_a_fan_out_are_found(mirror: GitMirror, remote: GitSandbox, depth: int) -> None:
    sha = hydrated(remote, None)
    fan_out_note(remote, sha, json.dumps({"drySha": DRY_B}), depth)
    assert json.loads(remote.read_note(sha) or "")["drySha"] == DRY_B  # git agrees
    mirror.refresh()
    assert mirror.metadata(sha).dry_sha == DRY_B


def test_notes_fanned_out_by_git_itself_are_found(mirror: GitMirror, remote: GitSandbox) -> None:
    stream = []
    for i in range(1, 301):
        stream += [
            f"commit refs/heads/many\nmark :{i}\ncommitter D <d@x> {i} +0000\ndata 2\n{i % 10}\n"
        ]
    stream += ["commit refs/notes/hydrator.metadata\ncommitter D <d@x> 999 +0000\ndata 5\nnotes\n"]
    for i in range(1, 301):
        note = json.dumps({"drySha": f"{i:040x}"})
        stream += [f"N inline :{i}\ndata {len(note)}\n{note}\n"]
    remote.git("fast-import", "--quiet", stdin="".join(stream))
    assert any(len(name) == 2 for name in remote.tree_names(NOTES_REF))  # fanned out
    mirror.refresh()
    commits = remote.git("rev-list", "--reverse", "refs/heads/many").split()
    for i in (1, 150, 300):
        assert mirror.metadata(commits[i - 1]).dry_sha == f"{i:040x}"


@given(
    st.lists(st.text("0123456789abcdef", min_size=40, max_size=40), min_size=1, unique=True),
    st.integers(0, 3),
)
def test_find_note_finds_every_note_at_any_fan_out(shas: list[str], depth: int) -> None:
    trees: dict[str, dict[str, tuple[int, str]]] = {}

    def subtree(path: str) -> dict[str, tuple[int, str]]:
        return trees.setdefault(path, {})

    for sha in shas:
        path = "root"
        for level in range(depth):
            part = sha[2 * level : 2 * level + 2]
            subtree(path)[part] = (TREE_MODE, f"{path}/{part}")
            path = f"{path}/{part}"
        subtree(path)[sha[2 * depth :]] = (0o100644, f"blob-{sha}")

    def read_tree(tree: str) -> TreeEntries:
        return trees.get(tree, {})

    for sha in shas:
        assert find_note("root", sha, read_tree) == f"blob-{sha}"
    missing = next(c * 40 for c in "fe" if c * 40 not in shas)
    assert find_note("root", missing, read_tree) is None


@given(
    st.text("0123456789abcdef", min_size=40, max_size=40),
    st.text(),
    st.text(),
)
def test_rendered_metadata_reads_back_the_same(dry: str, subject: str, body: str) -> None:
    parsed = parse_metadata(
        render_metadata(dry_sha=dry, subject=subject, body=body), source="file", where="x"
    )
    assert (parsed.dry_sha, parsed.subject, parsed.body, parsed.source) == (
        dry,
        subject,
        body,
        "file",
    )


@given(st.text(st.characters(blacklist_characters="*"), min_size=6), st.text(), st.text())
def test_redact_never_lets_a_secret_through(secret: str, before: str, after: str) -> None:
    assert secret not in redact(before + secret + after, [secret])


def test_redact_strips_user_info_from_urls() -> None:
    text = "fatal: unable to access 'https://user:tok@host/x.git/' (http://a@b/c)"
    assert redact(text, []) == "fatal: unable to access 'https://host/x.git/' (http://b/c)"


def test_what_was_read_at_an_earlier_notes_tip_is_let_go_when_the_hydrator_moves_it(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    """Each hydration moves the notes tip; the answers read at the old tip were kept, never
    read again, until the cache's bound (thousands of a daemon's commits every change)."""
    shas = [hydrated(remote, render_metadata(dry_sha=DRY_A), f"environment/e{i}") for i in range(4)]
    mirror.refresh()
    assert {mirror.metadata(sha).dry_sha for sha in shas} == {DRY_A}
    for turn in range(5):
        remote.note(shas[turn % 4], json.dumps({"drySha": f"{turn}" * 40}))  # a new tip
        mirror.refresh()
        assert mirror.metadata(shas[turn % 4]).dry_sha == f"{turn}" * 40
        assert mirror.metadata(shas[(turn + 1) % 4]).source in ("file", "note")
        assert len(mirror._metadata) == 2
