"""``promoter hydrate`` answers bad input with one sentence, names its placeholders, and
pushes to a remote repository with ``--push``."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli.main import main
from promoter.cli.sandbox import commit_files, git, init_bare
from tests.support import GitOpsRepo


def hydrate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["hydrate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("repo", "said"),
    [
        (
            "{tmp}/nonexistent",
            "promoter: no repository at {tmp}/nonexistent: the directory does not exist",
        ),
        ("{tmp}", "promoter: {tmp} is not a git repository"),
    ],
)
def test_a_missing_repository_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], repo: str, said: str
) -> None:
    code, _, err = hydrate(capsys, "--repo", repo.format(tmp=tmp_path), "--branch", "env/dev")
    assert (code, err.strip()) == (1, said.format(tmp=tmp_path))


@pytest.mark.parametrize(
    ("source_dir", "said"),
    [
        ("envs/{environment}", "unknown placeholder {environment} in the source folder"),
        ("envs/{env", "has a stray brace"),
        ("envs/{0}", "unknown placeholder {0}"),
    ],
)
def test_a_bad_source_folder_is_one_sentence_naming_the_placeholders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source_dir: str, said: str
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    code, _, err = hydrate(
        capsys,
        "--repo",
        str(gitops.path),
        "--branch",
        "environment/dev",
        "--source-dir",
        source_dir,
    )
    assert code == 1 and err.startswith("promoter: ") and said in err, err
    assert "Traceback" not in err


def test_the_placeholders_pick_each_environments_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = init_bare(tmp_path / "r.git")
    commit_files(
        repo,
        "main",
        {"envs/dev/a.yaml": "dev\n", "by-branch/environment/prod/a.yaml": "prod\n"},
        "two folders",
    )
    assert (
        hydrate(
            capsys, "--repo", str(repo), "--branch", "environment/dev", "--source-dir", "envs/{env}"
        )[0]
        == 0
    )
    assert (
        hydrate(
            capsys,
            "--repo",
            str(repo),
            "--branch",
            "environment/prod",
            "--source-dir",
            "by-branch/{branch}",
        )[0]
        == 0
    )
    assert git(repo, "show", "environment/dev-next:a.yaml") == "dev"
    assert git(repo, "show", "environment/prod-next:a.yaml") == "prod"


def test_push_sends_the_rendered_branches_and_notes_to_the_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote = GitOpsRepo.create(tmp_path / "remote").path
    clone = tmp_path / "clone.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(remote), str(clone))
    git(clone, "fetch", "--quiet", "origin", "refs/notes/*:refs/notes/*")
    commit_files(clone, "main", {"apps/guestbook/values.yaml": "image: guestbook:2.0.0\n"}, "2.0")
    code, out, _ = hydrate(
        capsys, "--repo", str(clone), "--branch", "environment/dev", "--push", "origin"
    )
    assert code == 0 and "pushed to origin" in out
    pushed = git(remote, "rev-parse", "environment/dev-next")
    assert pushed == git(clone, "rev-parse", "environment/dev-next")
    assert git(remote, "notes", "--ref=hydrator.metadata", "show", pushed).startswith("{")
