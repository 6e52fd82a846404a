"""End to end with a note-only hydrator and each merge method of the local SCM.

The hydrator writes ``refs/notes/hydrator.metadata`` and no file, like Argo CD's when
nothing changed: the commits that merges make on the active branches have neither,
and their dry SHA is found through what they merged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git, sandbox_config
from promoter.config.loader import parse_config
from promoter.git.lineage import LINEAGE_REF
from promoter.git.process.runner import run_git
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

SETTINGS = {"pollInterval": "0.1s", "resyncInterval": "30s", "workers": 2}


class Promoter:
    def __init__(self, client: TestClient, gitops: GitOpsRepo) -> None:
        self.client = client
        self.gitops = gitops
        self.set: set[tuple[str, str]] = set()

    def env(self, branch: str) -> dict[str, Any]:
        view = self.client.get("/api/v1/strategies/guestbook").json()
        return next(e for e in view["environments"] if e["branch"] == branch)

    def status(self, sha: str, key: str) -> None:
        if (sha, key) in self.set:
            return
        self.set.add((sha, key))
        url = f"/api/v1/repositories/gitops/commits/{sha}/statuses"
        response = self.client.post(url, json={"key": key, "phase": "success"})
        assert response.status_code == 201, response.text

    def promote(self, change: str) -> None:
        """CI on whatever each proposed branch holds, health once each environment runs it."""
        for branch in ENVIRONMENTS:

            def arrived(b: str = branch) -> bool:
                env = self.env(b)
                if (env.get("active") or {}).get("drySha") == change:
                    return True
                proposed = (env.get("proposed") or {}).get("hydratedSha")
                if env.get("pullRequest") and proposed:
                    self.status(proposed, "ci")
                return False

            wait_for(arrived, what=f"{branch} on {change[:7]}")
            self.status(self.gitops.tip(branch), "health")


@pytest.fixture(params=["merge", "squash", "rebase"])
def method(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def promoter(tmp_path: Path, method: str) -> Iterator[Promoter]:
    gitops = GitOpsRepo.create(tmp_path, metadata="note")
    text = sandbox_config(gitops.path, tmp_path / "state", daemon=SETTINGS)
    config = parse_config(text.replace("local: {}", f"local: {{mergeMethod: {method}}}"))
    with TestClient(Daemon(config).app) as client:
        p = Promoter(client, gitops)
        wait_for(lambda: p.env(ENVIRONMENTS[-1])["state"] == "up-to-date", what="a first pass")
        for branch in ENVIRONMENTS:
            p.status(gitops.tip(branch), "health")
        yield p


def test_a_note_only_hydrator_promotes_three_changes_in_a_row(
    promoter: Promoter, method: str
) -> None:
    gitops, path = promoter.gitops, promoter.gitops.path
    for version in ("1.1.0", "1.2.0", "1.3.0"):
        change = gitops.change(version, f"Bump guestbook to {version}")
        assert git(path, "ls-tree", "--name-only", f"{ENVIRONMENTS[0]}-next") == "apps"
        promoter.promote(change)
        for branch in ENVIRONMENTS:
            shown = f"{branch}:apps/guestbook/values.yaml"
            assert git(path, "show", shown) == f"image: guestbook:{version}"
    for branch in ENVIRONMENTS:
        tip = gitops.tip(branch)
        parents = git(path, "rev-list", "--parents", "-n1", tip).split()[1:]
        assert len(parents) == (2 if method == "merge" else 1)
        no_note = run_git(["notes", "--ref=hydrator.metadata", "list", tip], cwd=path, ok=(1,))
        assert no_note[1] == ""
        recorded = run_git(["notes", f"--ref={LINEAGE_REF}", "show", tip], cwd=path, ok=(0, 1))
        if method == "merge":  # its merged parent carries the note: found again, not recorded
            assert recorded[0] == 1
        else:  # found by searching -next for the same tree: recorded
            assert f'"drySha": "{change}"' in recorded[1]
        assert promoter.env(branch)["state"] == "up-to-date"
