"""The signedCommits gate end to end (daemon, local SCM, real git and real SSH signatures):
a change whose dry commits are all signed by an allowed signer is promoted and its check
names the signer; an unsigned or wrongly signed one is held, and the check names each SHA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.cli.hydrate import hydrate
from promoter.cli.sandbox import ENVIRONMENTS, VALUES
from promoter.wiring import Daemon
from tests.e2e.test_local_promotion import active_dry, env_view, set_status
from tests.support import GitOpsRepo, local_config, wait_for

from .keys import SshKey, signed_commit, ssh_key

DEV = "environment/dev"
KEY = "promoter/signed-commits"


def change(gitops: GitOpsRepo, version: str, key: SshKey | None) -> str:
    sha = signed_commit(gitops.path, "main", {VALUES: f"image: {version}\n"}, version, key)
    hydrate(repo=gitops.path, dry_ref="main", branches=ENVIRONMENTS, metadata="file")
    return sha


def check(client: TestClient, head: str) -> Any:
    runtime = client.runtime  # type: ignore[attr-defined]
    repo = runtime.config.repository("gitops")
    statuses = runtime.plugins["local"].get_commit_statuses(repo=repo, sha=head)
    return next((s for s in statuses if s.key == KEY), None)


def test_only_changes_signed_by_allowed_signers_are_promoted(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    alice, mallory = ssh_key(tmp_path, "alice@example.com"), ssh_key(tmp_path, "mallory@evil.test")
    signers = tmp_path / "allowed_signers"
    signers.write_text(alice.allowed() + "\n")
    gate = f"gates: [{{signedCommits: {{allowedSigners: {{fromFile: {signers}}}}}}}]"
    config = local_config(gitops.path, tmp_path / "state", environments={"dev": gate})
    daemon = Daemon(config)
    with TestClient(daemon.app) as client:
        client.runtime = daemon.runtime  # type: ignore[attr-defined]
        wait_for(lambda: env_view(client, "environment/prod")["state"] == "up-to-date")
        set_status(client, gitops.tip(DEV), "health")

        good = change(gitops, "1.1.0", alice)
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        wait_for(lambda: active_dry(client, DEV) == good, what="the signed change promoted")
        shown = check(client, env["proposed"]["hydratedSha"])
        assert (shown.phase.value, shown.description) == (
            "success",
            "signed by alice@example.com (1 commit)",
        )
        set_status(client, gitops.tip(DEV), "health")

        foreign = change(gitops, "1.2.0", mallory)
        unsigned = change(gitops, "1.3.0", None)
        env = wait_for(
            lambda: (
                (e := env_view(client, DEV))["proposed"]["drySha"] == unsigned
                and e.get("pullRequest")
                and e
            ),
            what="the PR of the unsigned change",
        )
        head = env["proposed"]["hydratedSha"]
        set_status(client, head, "ci")
        failed = wait_for(
            lambda: (s := check(client, head)) is not None and s.phase.value == "failure" and s,
            what="the signatures check failing",
        )
        assert f"{foreign[:7]} is signed by a key no one allowed (SHA256:" in failed.description
        assert f"{unsigned[:7]} is not signed" in failed.description
        blocked = env_view(client, DEV)
        assert blocked["state"] == "blocked"
        assert active_dry(client, DEV) == good
