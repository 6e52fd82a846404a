"""Setting a mirror up: a set-up that fails half-way leaves nothing that breaks later fetches."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.errors import GitError
from promoter.git import GitMirror
from tests.gitrepo import GitSandbox, git


@pytest.fixture
def remote(tmp_path: Path) -> GitSandbox:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"apps/guestbook/values.yaml": "image: guestbook:1\n"}, "Add guestbook")
    return sandbox


def test_a_mirror_whose_origin_could_not_be_set_is_set_up_again_by_its_next_use(
    tmp_path: Path, remote: GitSandbox
) -> None:
    path = tmp_path / "state" / "mirrors" / "gitops.git"
    path.mkdir(parents=True)
    git(path, "init", "--bare", "--quiet")
    lock = path / "config.lock"  # a live git holds the config: setting origin fails
    lock.write_text("")
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        with pytest.raises(GitError, match="config"):
            mirror.refresh()
        lock.unlink()
        assert mirror.refresh() is True
        assert mirror.branch_sha("main") == remote.branch_sha("main")


@pytest.mark.parametrize("left", ["HEAD", "HEAD and config"])
def test_a_mirror_left_half_made_by_a_killed_git_init_is_made_whole_by_its_next_use(
    tmp_path: Path, remote: GitSandbox, left: str
) -> None:
    # A process killed while ``git init --bare`` ran: HEAD is written, the rest is not.
    path = tmp_path / "state" / "mirrors" / "gitops.git"
    path.mkdir(parents=True)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    if left == "HEAD and config":
        (path / "config").write_text("[core]\n\tbare = true\n")
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        assert mirror.refresh() is True
        assert mirror.branch_sha("main") == remote.branch_sha("main")
