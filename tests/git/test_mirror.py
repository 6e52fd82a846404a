"""The bare mirror against a real local "remote": refresh, prune, refs, push, notes, errors."""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.errors import GitError
from promoter.git import GitMirror, NotesMoved, PushRejected
from promoter.metrics import sample
from tests.gitrepo import GitSandbox, git


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    return sandbox


@pytest.fixture
def mirror(tmp_path: Path, remote: GitSandbox) -> Iterator[GitMirror]:
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as m:
        m.refresh()
        yield m


def fetches(name: str = "gitops") -> float:
    return sample("promoter_git_fetches_total", {"repository": name})


def test_a_first_refresh_creates_a_bare_mirror_holding_every_branch(
    tmp_path: Path, remote: GitSandbox
) -> None:
    remote.commit("environment/dev", {"a.yaml": "a\n"})
    before = fetches("first")
    with GitMirror(name="first", url=remote.url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        assert mirror.path == tmp_path / "state" / "mirrors" / "first.git"
        assert git(mirror.path, "rev-parse", "--is-bare-repository") == "true"
        assert mirror.branch_sha("main") == remote.branch_sha("main")
        assert mirror.branch_sha("refs/heads/environment/dev") == remote.branch_sha(
            "environment/dev"
        )
        assert mirror.branch_sha("environment/prod") is None
    assert fetches("first") == before + 1


def test_refresh_does_nothing_when_the_remote_did_not_move(mirror: GitMirror) -> None:
    before = fetches()
    assert mirror.refresh() is False
    assert mirror.refresh() is False
    assert fetches() == before


def test_refresh_fetches_after_a_push_to_the_remote(mirror: GitMirror, remote: GitSandbox) -> None:
    new = remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:2\n"}, "Bump")
    assert mirror.refresh() is True
    assert mirror.branch_sha("main") == new
    assert mirror.refresh() is False


def test_a_branch_deleted_on_the_remote_is_pruned_from_the_mirror(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    remote.commit("environment/dev-next", {"a.yaml": "a\n"})
    mirror.refresh()
    assert mirror.branch_sha("environment/dev-next") is not None
    remote.delete_branch("environment/dev-next")
    assert mirror.refresh() is True
    assert mirror.branch_sha("environment/dev-next") is None
    assert "refs/heads/environment/dev-next" not in mirror.refs()


def test_notes_are_fetched_with_the_branches(mirror: GitMirror, remote: GitSandbox) -> None:
    sha = remote.branch_sha("main")
    assert sha is not None
    remote.note(sha, "hello", ref="refs/notes/promoter.ledger")
    assert mirror.refresh() is True
    assert mirror.read_note("promoter.ledger", sha) == "hello\n"
    assert mirror.read_note("refs/notes/promoter.ledger", "0" * 40) is None
    assert mirror.read_note("refs/notes/nothing", sha) is None


def test_a_first_fetch_clones_every_branch_and_notes_ref_into_packed_refs(
    tmp_path: Path, remote: GitSandbox
) -> None:
    remote.commit("environment/dev", {"a.yaml": "a\n"})
    remote.note(remote.branch_sha("environment/dev") or "", '{"drySha": "x"}')
    with GitMirror(name="cloned", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.ensure()
        mirror.fetch()
        assert mirror.refs() == {
            ref: sha
            for sha, ref in (
                line.split(" ")
                for line in remote.git(
                    "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/notes"
                ).splitlines()
            )
        }
        assert not list((mirror.path / "refs" / "heads").iterdir())  # all in packed-refs
        assert git(mirror.path, "config", "remote.origin.url") == remote.url
        remote.commit("environment/dev", {"a.yaml": "b\n"})
        assert mirror.refresh() is True  # later refreshes fetch into the clone
        assert mirror.branch_sha("environment/dev") == remote.branch_sha("environment/dev")


def test_a_relative_local_path_is_a_valid_url(
    tmp_path: Path, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with GitMirror(name="relative", url="remote.git", root=Path("state")) as mirror:
        monkeypatch.chdir("/")
        assert mirror.refresh() is True
        assert mirror.branch_sha("main") == remote.branch_sha("main")


def test_an_unreachable_remote_raises_a_git_error(tmp_path: Path) -> None:
    with GitMirror(name="gone", url=str(tmp_path / "nowhere.git"), root=tmp_path) as mirror:
        # A mirror with no ref yet clones (git says "does not exist") without an ls-remote.
        with pytest.raises(GitError, match=r"clone .*does not exist|does not appear to be a git"):
            mirror.refresh()
        with pytest.raises(GitError, match=r"does not exist|does not appear to be a git"):
            mirror.fetch()


def test_a_remote_gone_after_the_clone_fails_the_refreshs_ls_remote(
    tmp_path: Path, remote: GitSandbox
) -> None:
    with GitMirror(name="moved", url=remote.url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        remote.path.rename(tmp_path / "elsewhere.git")
        with pytest.raises(GitError, match="ls-remote"):
            mirror.refresh()


@pytest.mark.parametrize(
    "url", ["https://user:s3cretTOKEN@127.0.0.1:1/x.git", "git://user:s3cretTOKEN@127.0.0.1:1/x"]
)
def test_credentials_in_the_url_never_appear_in_a_git_error(tmp_path: Path, url: str) -> None:
    with (
        GitMirror(name="secret", url=url, root=tmp_path) as mirror,
        pytest.raises(GitError) as caught,
    ):
        mirror.refresh()
    text = "".join(traceback.format_exception(caught.value))
    assert "s3cretTOKEN" not in text
    assert "127.0.0.1:1" in str(caught.value)
    assert caught.value.__cause__ is not None and caught.value.__context__ is None


def test_values_of_the_extra_environment_never_appear_in_a_git_error(
    tmp_path: Path, remote: GitSandbox
) -> None:
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.bare"}
    env["GIT_CONFIG_VALUE_0"] = "s3cretTOKEN"  # git echoes a bad boolean: a leak to catch
    with (
        GitMirror(name="env", url=remote.url, root=tmp_path, env=env) as mirror,
        pytest.raises(GitError) as caught,
    ):
        mirror.refresh()
    assert "bad boolean config value '***'" in str(caught.value)
    assert "s3cretTOKEN" not in "".join(traceback.format_exception(caught.value))


def test_an_environment_callable_is_read_for_every_command_that_reaches_the_remote(
    tmp_path: Path, remote: GitSandbox
) -> None:
    calls: list[int] = []

    def credentials() -> dict[str, str]:
        calls.append(1)
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Bearer token-{len(calls)}",
        }

    with GitMirror(name="rotating", url=remote.url, root=tmp_path, env=credentials) as mirror:
        mirror.refresh()
        seen = len(calls)
        mirror.refresh()
        assert seen == 1  # the first refresh: the clone alone
        assert len(calls) == seen + 1  # an idle refresh: one command
        main = remote.branch_sha("main") or ""
        mirror.tree_sha(main)
        mirror.log(None, main)
        mirror.is_ancestor(main, main)
        mirror.write_note("refs/notes/test", main, "a note")
        assert len(calls) == seen + 1  # local commands never ask for credentials


def test_tree_sha_is_the_tree_of_the_commit(mirror: GitMirror, remote: GitSandbox) -> None:
    sha = remote.branch_sha("main")
    assert mirror.tree_sha(sha or "") == remote.git("rev-parse", "main^{tree}")
    assert mirror.tree_sha("refs/heads/main") == remote.git("rev-parse", "main^{tree}")
    with pytest.raises(GitError, match="not in mirror"):
        mirror.tree_sha("1" * 40)


def test_is_ancestor_answers_true_false_and_false_for_unknown_commits(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    first = remote.branch_sha("main") or ""
    second = remote.commit_dry({"b.yaml": "b\n"})
    mirror.refresh()
    assert mirror.is_ancestor(first, second) is True
    assert mirror.is_ancestor(second, second) is True
    assert mirror.is_ancestor(second, first) is False
    assert mirror.is_ancestor(first, "1" * 40) is False
    assert mirror.is_ancestor("not a sha", second) is False
    third = remote.commit_dry({"c.yaml": "c\n"})
    assert mirror.is_ancestor(first, third) is False  # not fetched yet, so not remembered
    mirror.refresh()
    assert mirror.is_ancestor(first, third) is True


def test_log_lists_the_dry_commits_newest_first(mirror: GitMirror, remote: GitSandbox) -> None:
    first = remote.branch_sha("main") or ""
    second = remote.commit_dry({"b.yaml": "b\n"}, "Second change\n\nwith a body")
    third = remote.commit_dry({"c.yaml": "c\n"}, "Third change")
    mirror.refresh()
    commits = mirror.log(first, third)
    assert [(c.sha, c.subject) for c in commits] == [
        (third, "Third change"),
        (second, "Second change"),
    ]
    assert commits[0].author == "Dev Eloper" and commits[0].date is not None
    assert [c.sha for c in mirror.log(None, third, limit=2)] == [third, second]
    assert mirror.log(third, third) == []


def test_authors_names_every_author_and_co_author_of_the_commits_between(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = remote.branch_sha("main") or ""
    second = remote.commit_dry(
        {"b.yaml": "b\n"},
        "Pair on b\n\nCo-authored-by: Ada Lovelace <12345+ada@users.noreply.github.com>\n"
        "Co-authored-by: Grace <grace@example.com>",
    )
    third = remote.commit_dry({"c.yaml": "c\n"}, "Third change")
    mirror.refresh()
    assert [(a.name, a.email) for a in mirror.authors(first, third)] == [
        ("Dev Eloper", "dev@example.invalid"),
        ("Ada Lovelace", "12345+ada@users.noreply.github.com"),
        ("Grace", "grace@example.com"),
    ]
    assert mirror.authors(second, second) == ()
    monkeypatch.setattr("promoter.git.facts.MAX_AUTHORS_LOG", 1)
    with pytest.raises(GitError, match="more than 1 commits"):
        mirror.authors(None, third + "^{commit}")  # three commits; not a SHA: read again


def test_a_co_author_line_anywhere_in_the_message_in_any_case_is_read(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    first = remote.branch_sha("main") or ""
    second = remote.commit_dry(
        {"b.yaml": "b\n"},
        "Pair on b\n\nWe did it together.\nCo-authored-by: Bob <bob@example.com>\n"
        "Signed-off-by: Dev Eloper <dev@example.invalid>\n\nMore words after.\n"
        "  co-AUTHORED-by:Ada <12345+ada@users.noreply.github.com>",
    )
    mirror.refresh()
    assert [(a.name, a.email) for a in mirror.authors(first, second)] == [
        ("Dev Eloper", "dev@example.invalid"),
        ("Bob", "bob@example.com"),
        ("Ada", "12345+ada@users.noreply.github.com"),
    ]


def test_a_push_with_a_stale_lease_is_rejected_and_changes_nothing(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    old = remote.branch_sha("main") or ""
    tree = mirror.tree_sha(old)
    ours = mirror.commit_tree(tree, [old], "revert")
    theirs = remote.commit_dry({"x.yaml": "x\n"}, "someone else")
    with pytest.raises(PushRejected, match="stale info"):
        mirror.push([f"{ours}:refs/heads/main"], leases={"refs/heads/main": old})
    assert remote.branch_sha("main") == theirs
    with pytest.raises(PushRejected):
        mirror.push([f"{ours}:refs/heads/main"], leases={"refs/heads/main": None})
    assert isinstance(PushRejected("x"), GitError)


def test_an_atomic_push_with_fresh_leases_moves_every_ref(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    old = remote.branch_sha("main") or ""
    revert = mirror.commit_tree(mirror.tree_sha(old), [old], "Revert to the healthy tree")
    mirror.push(
        [f"{revert}:refs/heads/main", f"{revert}:refs/heads/environment/dev-revert-abc"],
        leases={"refs/heads/main": old, "refs/heads/environment/dev-revert-abc": None},
    )
    assert remote.branch_sha("main") == revert
    assert remote.branch_sha("environment/dev-revert-abc") == revert
    assert mirror.refresh() is True


def test_commits_and_notes_are_written_without_any_git_identity(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{variable}_NAME")
        monkeypatch.delenv(f"GIT_{variable}_EMAIL")
    old = remote.branch_sha("main") or ""
    new = mirror.commit_tree(mirror.tree_sha(old), [old], "no identity here")
    assert git(mirror.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>", new) == (
        "promoter <promoter@localhost>|promoter <promoter@localhost>"
    )
    mirror.write_note("refs/notes/promoter.ledger", new, "entry")
    assert mirror.read_note("refs/notes/promoter.ledger", new) == "entry"


def test_a_written_note_keeps_its_text_exactly_and_can_be_pushed(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    sha = remote.branch_sha("main") or ""
    text = '{"healthy": true}  \n\n\n# not a comment\n'
    with mirror.lock:
        before = mirror.refs().get("refs/notes/promoter.ledger")
        mirror.write_note("promoter.ledger", sha, text)
        mirror.push(
            ["refs/notes/promoter.ledger:refs/notes/promoter.ledger"],
            leases={"refs/notes/promoter.ledger": before},
        )
    assert remote.read_note(sha, ref="refs/notes/promoter.ledger") == text
    assert mirror.refresh() is False


def test_many_notes_are_written_in_one_commit_where_git_itself_reads_them(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    ref = "refs/notes/promoter.ledger"
    commits = [remote.commit_dry({f"n{i}.yaml": f"{i}\n"}, f"change {i}") for i in range(3)]
    mirror.refresh()
    mirror.write_note(ref, commits[0], "written by git notes")
    key = b"promoter.ledger app environment/dev\n"
    key_sha = git(mirror.path, "hash-object", "--stdin", stdin=key.decode())
    before = mirror.refs()[ref]
    texts = {commits[0]: "replaced\n", commits[1]: '{"a": 1}\n\n', key_sha: "on a key blob"}
    tip = mirror.write_notes(ref, texts, message="ledger", blobs=[key])
    assert git(mirror.path, "rev-parse", f"{tip}^") == before
    for sha, text in texts.items():
        assert mirror.read_note(ref, sha) == text
        assert git(mirror.path, "notes", f"--ref={ref}", "show", sha).strip() == text.strip()
    assert git(mirror.path, "cat-file", "-t", key_sha) == "blob"
    assert mirror.read_note(ref, commits[2]) is None
    mirror.push([f"{ref}:{ref}"], leases={ref: None})
    assert remote.read_note(commits[1], ref=ref) == texts[commits[1]]


def test_notes_written_in_a_batch_keep_the_fan_out_git_gave_them(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    ref = "refs/notes/fanned"
    sha = remote.branch_sha("main") or ""
    blob = git(remote.path, "hash-object", "-w", "--stdin", stdin="old\n")
    tree = git(remote.path, "mktree", stdin=f"100644 blob {blob}\t{sha[2:]}\n")
    fanned = git(remote.path, "mktree", stdin=f"040000 tree {tree}\t{sha[:2]}\n")
    commit = git(remote.path, "commit-tree", fanned, "-m", "notes with fan-out")
    git(remote.path, "update-ref", ref, commit)
    with GitMirror(name="fanned", url=remote.url, root=mirror.path.parent.parent / "f") as other:
        other.refresh()
        assert other.read_note(ref, sha) == "old\n"
        tip = other.write_notes(ref, {sha: "new\n"}, message="update")
        assert git(other.path, "ls-tree", "-r", "--name-only", tip) == f"{sha[:2]}/{sha[2:]}"
        assert other.read_note(ref, sha) == "new\n"


def test_threads_share_one_mirror_safely(mirror: GitMirror, remote: GitSandbox) -> None:
    shas = [remote.commit_dry({f"f{i}.yaml": f"{i}\n"}, f"change {i}") for i in range(20)]
    mirror.refresh()
    expected = {sha: remote.git("rev-parse", f"{sha}^{{tree}}") for sha in shas}
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i, sha in enumerate(shas):
                assert mirror.tree_sha(sha) == expected[sha]
                assert mirror.is_ancestor(shas[0], sha)
                if i % 5 == 0:
                    mirror.refresh()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_broken_mirror_directory_is_a_git_error(tmp_path: Path, remote: GitSandbox) -> None:
    (tmp_path / "mirrors" / "broken.git").mkdir(parents=True)
    (tmp_path / "mirrors" / "broken.git" / "HEAD").write_text("garbage")
    mirror = GitMirror(name="broken", url=remote.url, root=tmp_path)
    with pytest.raises(GitError, match="cannot create the mirror"):
        mirror.refresh()


def test_a_mirror_name_must_be_a_plain_file_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid mirror name"):
        GitMirror(name="../escape", url=str(tmp_path), root=tmp_path)


def test_every_note_of_a_notes_tree_is_read_in_one_batch_and_each_read_finds_its_own(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    shas = [remote.commit(f"environment/e{i}", {"a.yaml": f"{i}\n"}) for i in range(5)]
    for i, sha in enumerate(shas):
        remote.note(sha, f'{{"drySha": "{i}", "binary": "\\u00e9\\u0000"}}\n', ref="refs/notes/x")
    mirror.refresh()
    texts = [mirror.read_note("refs/notes/x", sha) for sha in shas]
    assert texts == [f'{{"drySha": "{i}", "binary": "\\u00e9\\u0000"}}\n' for i in range(5)]
    assert mirror.read_note("refs/notes/x", "0" * 40) is None
    assert mirror._objects(["0" * 40, shas[0]]).keys() == {shas[0]}


def test_a_tips_tree_and_commit_time_come_with_the_refs(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    sha = remote.commit("environment/dev", {"a.yaml": "a\n"})
    mirror.refresh()
    assert mirror.tree_sha(sha) == git(remote.path, "rev-parse", f"{sha}^{{tree}}")
    when = git(remote.path, "show", "-s", "--format=%ct", sha)
    assert mirror.commit_time(sha) is not None
    assert int(mirror.commit_time(sha).timestamp()) == int(when)  # type: ignore[union-attr]


def test_a_local_notes_write_reads_again_only_the_ref_it_moved(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    ref = "refs/notes/promoter.ledger"
    commit = remote.commit_dry({"a.yaml": "a\n"})
    mirror.refresh()
    main = mirror.branch_sha("main")
    # Moved behind the mirror's back: a full read of the refs would see it, a read of
    # the notes ref alone does not (thousands of branches are not read for each write).
    git(mirror.path, "update-ref", "refs/heads/main", f"{commit}^")
    tip = mirror.write_notes(ref, {commit: "healthy\n"}, message="ledger")
    assert mirror.branch_sha(ref) == tip
    assert mirror.branch_sha("main") == main
    lease = mirror.branch_sha(ref)
    mirror.push_commit(ref, tip, lease=None)
    assert mirror.set_ref(ref, tip, expected=lease) is True
    assert mirror.branch_sha(ref) == tip
    assert mirror.branch_sha("main") == main
    assert remote.git("rev-parse", ref) == tip


def test_the_trees_of_a_superseded_notes_tree_leave_the_cache_and_shared_ones_stay(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    """Each ledger write makes a new notes root and fan-out tree; the cache keeps the
    trees of the tip it reads, not every earlier one (a burst of promotions left tens of
    thousands of superseded entries behind)."""
    ref = "refs/notes/fanned"
    first_of: dict[str, str] = {}  # one commit per leading byte
    for i in range(12):
        sha = remote.commit_dry({f"f{i}.yaml": f"{i}\n"}, f"change {i}")
        first_of.setdefault(sha[:2], sha)
    shas = list(first_of.values())[:6]
    lines = {}
    for sha in shas:  # a notes tree with one fan-out tree per leading byte
        blob = git(remote.path, "hash-object", "-w", "--stdin", stdin=f"first {sha}\n")
        sub = git(remote.path, "mktree", stdin=f"100644 blob {blob}\t{sha[2:]}\n")
        lines[sha[:2]] = f"040000 tree {sub}\t{sha[:2]}"
    root = git(remote.path, "mktree", stdin="\n".join(sorted(lines.values())) + "\n")
    git(remote.path, "update-ref", ref, git(remote.path, "commit-tree", root, "-m", "notes"))
    mirror.refresh()
    cache = mirror._read_tree
    assert [mirror.read_note(ref, sha) for sha in shas] == [f"first {sha}\n" for sha in shas]
    untouched = cache._trees[cache(root)[shas[1][:2]][1]]
    for turn in range(8):
        mirror.write_notes(ref, {shas[0]: f"turn {turn}\n"}, message=f"ledger {turn}")
        assert mirror.read_note(ref, shas[0]) == f"turn {turn}\n"
        assert mirror.read_note(ref, shas[1]) == f"first {shas[1]}\n"
    tip_root = mirror.tree_sha(mirror.branch_sha(ref) or "")
    reachable = git(mirror.path, "ls-tree", "-r", "-t", tip_root).splitlines()
    held = {tip_root} | {line.split()[2] for line in reachable if line.split()[1] == "tree"}
    assert set(cache._trees) == held
    assert cache._entries == sum(len(cache._trees[t]) for t in held)
    assert cache._trees[cache(tip_root)[shas[1][:2]][1]] is untouched  # not read again


def test_a_notes_write_on_a_tip_another_writer_moved_meanwhile_says_so_and_writes_nothing(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    """A runtime swapped for a new configuration has mirrors of its own on the same
    directories while the old one flushes its ledger: a write based on the tip this
    mirror last saw, which another writer moved since, is refused as ``NotesMoved``
    (its caller reads the notes again and writes on the new tip) and the next one lands
    on top of the other's."""
    ref = "refs/notes/promoter.ledger"
    sha = remote.branch_sha("main") or ""
    mirror.write_notes(ref, {sha: "first\n"}, message="ledger")
    with GitMirror(name=mirror.name, url=remote.url, root=mirror.path.parent.parent) as other:
        assert other.path == mirror.path
        moved = other.write_notes(ref, {sha: "moved\n"}, message="another writer")
    with pytest.raises(NotesMoved):
        mirror.write_notes(ref, {sha: "stale\n"}, message="ledger")
    assert git(mirror.path, "rev-parse", ref) == moved
    tip = mirror.write_notes(ref, {sha: "last\n"}, message="ledger")
    assert git(mirror.path, "rev-parse", f"{tip}^") == moved
    assert mirror.read_note(ref, sha) == "last\n"


def count_git(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands the mirror runs from now on (their first word)."""
    import promoter.git.bare as bare

    ran: list[str] = []
    real = bare.run_git

    def counted(args: list[str], **kwargs: object) -> object:
        ran.append(args[0])
        return real(args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bare, "run_git", counted)
    return ran


def noted_and_pushed(mirror: GitMirror, remote: GitSandbox, ref: str) -> tuple[str, str]:
    """A new commit with a note "one" under ``ref``, pushed: ``(commit, notes tip)``."""
    commit = remote.commit_dry({"a.yaml": "a\n"})
    mirror.refresh()
    tip = mirror.write_notes(ref, {commit: "one\n"}, message="notes")
    mirror.push_commit(ref, tip, lease=None)
    return commit, tip


def test_a_notes_write_and_its_push_cost_three_git_processes_and_leave_the_refs_true(
    mirror: GitMirror, remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger's and the audit's way: the new tip comes from fast-import itself, and
    the ref the local write moved is not moved again after the push."""
    ref = "refs/notes/promoter.ledger"
    commit, first = noted_and_pushed(mirror, remote, ref)
    ran = count_git(monkeypatch)
    tip = mirror.write_notes(ref, {commit: "two\n"}, message="ledger")
    assert ran == ["fast-import"]
    assert git(mirror.path, "rev-parse", ref) == tip and mirror.branch_sha(ref) == tip
    mirror.push_commit(ref, tip, lease=first)
    mirror.keep_pushed(ref, tip, before=first)
    assert ran == ["fast-import", "push", "for-each-ref"]
    assert remote.git("rev-parse", ref) == tip
    assert git(mirror.path, "rev-parse", ref) == tip and mirror.branch_sha(ref) == tip
    assert mirror.read_note(ref, commit) == "two\n"


def test_a_fetch_that_took_the_ref_back_during_the_push_is_mended_after_it(
    mirror: GitMirror, remote: GitSandbox
) -> None:
    ref = "refs/notes/promoter.audit"
    commit, before = noted_and_pushed(mirror, remote, ref)
    tip = mirror.write_notes(ref, {commit: "two\n"}, message="audit")
    mirror.push_commit(ref, tip, lease=before)
    # A fetch that read the remote before the push landed writes its answer after it.
    assert mirror.set_ref(ref, before, expected=tip) is True
    mirror.keep_pushed(ref, tip, before=before)
    assert git(mirror.path, "rev-parse", ref) == tip and mirror.branch_sha(ref) == tip
    assert mirror.read_note(ref, commit) == "two\n"


def packs(repository: Path) -> dict[str, int]:
    """Each pack's file name and inode."""
    return {p.name: p.stat().st_ino for p in (repository / "objects" / "pack").glob("*.pack")}


@pytest.mark.parametrize(
    ("owner", "scheme", "copied"),
    [("self", "", True), ("another user", "", False), ("self", "file://", False)],
)
def test_only_a_remote_on_this_machine_owned_by_the_daemons_user_is_cloned_by_local_copy(
    tmp_path: Path,
    remote: GitSandbox,
    monkeypatch: pytest.MonkeyPatch,
    owner: str,
    scheme: str,
    copied: bool,
) -> None:
    """A local copy takes the remote's packs as they are (no upload-pack, no index-pack);
    the transport makes a pack of its own. Neither links a file into the remote."""
    remote.git("repack", "-a", "-d", "-q")
    remote.commit("environment/dev", {"a.yaml": "a\n"})
    remote.git("repack", "-d", "-q")
    assert len(packs(remote.path)) == 2  # copied as two; the transport sends one
    if owner != "self":
        uid = os.geteuid() + 1
        monkeypatch.setattr("promoter.git.remote_copy.os.geteuid", lambda: uid)
    url = scheme + str(remote.path)
    with GitMirror(name="copied", url=url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        assert mirror.branch_sha("main") == remote.branch_sha("main")
        theirs, mine = packs(remote.path), packs(mirror.path)
        assert (set(mine) == set(theirs)) is copied
        assert not set(mine.values()) & set(theirs.values())  # never a hard link
        remote.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:3\n"}, "Bump")
        assert mirror.refresh() is True  # a copy fetches like a clone through the transport
        assert mirror.branch_sha("main") == remote.branch_sha("main")


def test_a_mirror_cut_short_leaves_the_local_remote_it_was_copied_from_whole(
    tmp_path: Path, remote: GitSandbox
) -> None:
    remote.git("repack", "-a", "-d", "-q")
    with GitMirror(name="copied", url=remote.url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        for pack in (mirror.path / "objects" / "pack").glob("*.pack"):
            os.truncate(pack, pack.stat().st_size // 2)
    assert remote.git("fsck", "--no-dangling").strip() == ""
