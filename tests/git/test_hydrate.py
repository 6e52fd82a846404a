"""The demo hydrator: -next branches with file and note, stacking, no-ops, folders per env."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from promoter.cli.hydrate import HydrateError, HydrateResult, hydrate
from promoter.git import NOTES_REF, GitMirror
from tests.gitrepo import GitSandbox

ENVS = ["environment/dev", "environment/staging"]


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry(
        {
            "envs/dev/app.yaml": "replicas: 1\n",
            "envs/staging/app.yaml": "replicas: 2\n",
            "README.md": "dry sources\n",
        },
        "Add the app\n\nWith a body.",
    )
    return sandbox


def file_metadata(remote: GitSandbox, sha: str) -> dict[str, str]:
    value: dict[str, str] = json.loads(remote.show(f"{sha}:hydrator.metadata"))
    return value


def note_metadata(remote: GitSandbox, sha: str) -> dict[str, str]:
    value: dict[str, str] = json.loads(remote.read_note(sha) or "null")
    return value


def test_a_first_hydrate_creates_the_next_and_active_branches_with_file_and_note(
    remote: GitSandbox,
) -> None:
    dry = remote.branch_sha("main")
    results = hydrate(repo=remote.path, branches=ENVS)
    assert list(results) == ENVS
    dev = results["environment/dev"]
    assert dev == HydrateResult(
        "environment/dev", "environment/dev-next", dev.sha, dry or "", noop=False, created=True
    )
    for env, result in results.items():
        assert remote.branch_sha(f"{env}-next") == result.sha
        assert remote.branch_sha(env) == result.sha  # a fresh environment starts hydrated
        assert remote.git("rev-list", "--parents", "-n1", result.sha).split() == [result.sha]
    names = remote.tree_names(dev.sha)
    assert sorted(names) == ["README.md", "envs", "hydrator.metadata"]
    metadata = file_metadata(remote, dev.sha)
    assert metadata == note_metadata(remote, dev.sha)
    assert metadata["drySha"] == dry
    assert metadata["subject"] == "Add the app"
    assert metadata["body"] == "With a body."
    assert metadata["author"] == "Dev Eloper <dev@example.invalid>"
    assert metadata["repoURL"] == str(remote.path)
    assert metadata["date"]


def test_a_new_dry_commit_stacks_on_the_next_tip(remote: GitSandbox) -> None:
    first = hydrate(repo=remote.path, branches=ENVS)["environment/dev"]
    dry = remote.commit_dry({"envs/dev/app.yaml": "replicas: 3\n"}, "Scale dev")
    second = hydrate(repo=remote.path, branches=ENVS)["environment/dev"]
    assert not second.noop and not second.created
    assert remote.git("rev-parse", f"{second.sha}^") == first.sha
    assert remote.branch_sha("environment/dev") == first.sha  # active branches never move
    assert remote.show(f"{second.sha}:envs/dev/app.yaml") == "replicas: 3"
    assert file_metadata(remote, second.sha)["drySha"] == dry
    assert note_metadata(remote, second.sha)["drySha"] == dry


def test_the_first_next_commit_stacks_on_the_active_branch(remote: GitSandbox) -> None:
    active = remote.commit("environment/dev", {"old.yaml": "old\n"}, "Hand-made")
    result = hydrate(repo=remote.path, branches=["environment/dev"])["environment/dev"]
    assert remote.git("rev-parse", f"{result.sha}^") == active
    assert not result.created and remote.branch_sha("environment/dev") == active
    assert "old.yaml" not in remote.tree_names(result.sha)


def test_an_unchanged_rendering_only_moves_the_note(tmp_path: Path, remote: GitSandbox) -> None:
    source = "envs/{env}"
    before = hydrate(repo=remote.path, branches=ENVS, source_dir=source)
    dry = remote.commit_dry({"envs/staging/app.yaml": "replicas: 4\n"}, "Scale staging")
    after = hydrate(repo=remote.path, branches=ENVS, source_dir=source)
    dev = after["environment/dev"]
    assert dev.noop and dev.sha == before["environment/dev"].sha
    assert remote.branch_sha("environment/dev-next") == dev.sha
    assert file_metadata(remote, dev.sha)["drySha"] != dry  # the file keeps the old dry SHA
    assert note_metadata(remote, dev.sha)["drySha"] == dry  # the note runs ahead
    assert not after["environment/staging"].noop
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.refresh()
        assert (mirror.metadata(dev.sha).dry_sha, mirror.metadata(dev.sha).source) == (dry, "note")


def test_hydrating_the_same_dry_commit_twice_changes_nothing(remote: GitSandbox) -> None:
    first = hydrate(repo=remote.path, branches=ENVS)
    refs = remote.git("for-each-ref")
    second = hydrate(repo=remote.path, branches=ENVS)
    assert all(r.noop for r in second.values())
    assert [r.sha for r in second.values()] == [r.sha for r in first.values()]
    assert remote.git("for-each-ref") == refs  # not even a new notes commit


def test_each_environment_renders_its_own_folder(remote: GitSandbox) -> None:
    results = hydrate(repo=remote.path, branches=ENVS, source_dir="envs/{env}/")
    for env, replicas in (("environment/dev", 1), ("environment/staging", 2)):
        sha = results[env].sha
        assert sorted(remote.tree_names(sha)) == ["app.yaml", "hydrator.metadata"]
        assert remote.show(f"{sha}:app.yaml") == f"replicas: {replicas}"


def test_a_missing_source_folder_is_a_clear_error(remote: GitSandbox) -> None:
    with pytest.raises(HydrateError, match="source folder 'envs/prod' for environment/prod"):
        hydrate(
            repo=remote.path,
            branches=["environment/dev", "environment/prod"],
            source_dir="envs/{env}",
        )
    assert remote.branch_sha("environment/dev-next") is None  # nothing half-done


def test_an_unknown_dry_ref_is_a_clear_error(remote: GitSandbox) -> None:
    with pytest.raises(HydrateError, match="'nope' is not a commit"):
        hydrate(repo=remote.path, dry_ref="nope", branches=ENVS)


def test_hydrate_works_without_any_git_identity(
    remote: GitSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    sha = hydrate(repo=remote.path, branches=ENVS)["environment/dev"].sha
    identity = "promoter <promoter@localhost>|promoter <promoter@localhost>"
    assert remote.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", sha) == identity
    assert remote.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", NOTES_REF) == identity


def test_hydrate_in_a_clone_pushes_branches_and_notes(tmp_path: Path, remote: GitSandbox) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", remote.url, str(clone)], check=True)
    results = hydrate(repo=clone, branches=ENVS, push_to="origin")
    for env, result in results.items():
        assert remote.branch_sha(f"{env}-next") == result.sha
        assert remote.branch_sha(env) == result.sha
    assert note_metadata(remote, results["environment/dev"].sha)["drySha"] == remote.branch_sha(
        "main"
    )
