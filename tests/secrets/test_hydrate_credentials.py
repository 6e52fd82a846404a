"""``promoter hydrate`` never writes the origin's credentials into a hydrated commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from promoter.cli.main import main
from tests.gitrepo import GitSandbox

TOKEN = "ghp_NeverInACommit000000000000000000000000"


@pytest.mark.parametrize(
    ("origin", "written"),
    [
        (
            f"https://robot:{TOKEN}@github.com/acme/gitops.git",
            "https://github.com/acme/gitops.git",
        ),
        (
            f"https://{TOKEN}@gitlab.example.com/acme/gitops",
            "https://gitlab.example.com/acme/gitops",
        ),
        ("git@github.com:acme/gitops.git", "git@github.com:acme/gitops.git"),
    ],
)
def test_the_repo_url_written_by_hydrate_has_no_credentials(
    tmp_path: Path, origin: str, written: str
) -> None:
    sandbox = GitSandbox(tmp_path)
    sandbox.commit_dry({"app.yaml": "replicas: 1\n"}, "Add the app")
    subprocess.run(
        ["git", "--git-dir", str(sandbox.path), "config", "remote.origin.url", origin], check=True
    )
    assert main(["hydrate", "--repo", str(sandbox.path), "--branch", "environment/dev"]) == 0
    tip = sandbox.branch_sha("environment/dev-next") or ""
    file = json.loads(sandbox.show(f"{tip}:hydrator.metadata"))
    note = json.loads(sandbox.read_note(tip) or "null")
    assert file["repoURL"] == note["repoURL"] == written
    history = subprocess.run(
        ["git", "--git-dir", str(sandbox.path), "log", "-p", "--all", "--notes=*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert TOKEN not in history
