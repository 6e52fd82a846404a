"""A merge the SCM carried out but answered with a 502: counted once, never closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import sandbox_config
from promoter.config import Repository
from promoter.config.loader import parse_config
from promoter.errors import ScmUnavailable
from promoter.metrics import sample
from promoter.wiring import Daemon
from scm_plugins.local import LocalScm
from tests.e2e.test_local_promotion import active_dry, env_view, set_status, wait_state
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for


class AnswerLost(LocalScm):
    """The local SCM, whose first merge happens and is then answered 502 Bad Gateway."""

    lost = 0

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        merged = super().merge_pull_request(
            repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
        )
        if self.lost == 0:
            self.lost += 1
            raise ScmUnavailable("502 Bad Gateway")
        return merged


@pytest.mark.parametrize("method", ["merge", "squash"])
def test_a_merge_answered_502_after_it_happened_is_counted_once_and_never_closed(
    gitops: GitOpsRepo, tmp_path: Path, method: str
) -> None:
    """A squash merge leaves no second parent: it is recognised by the dry commit it runs."""
    text = sandbox_config(
        gitops.path, tmp_path / "state", daemon={"pollInterval": "0.1s", "workers": 2}
    )
    config = parse_config(text.replace("local: {}", f"local: {{mergeMethod: {method}}}"))
    plugin = AnswerLost(provider=config.scm_providers[0], state_dir=str(tmp_path / "state"))
    daemon = Daemon(config, plugins={"local": plugin})
    dev = "environment/dev"
    promoted = {"strategy": "guestbook", "environment": dev}
    with TestClient(daemon.app) as client:
        wait_state(client, "environment/prod", "up-to-date")
        for branch in ENVIRONMENTS:
            set_status(client, gitops.tip(branch), "health")
        before = sample("promoter_promotions_total", promoted)
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, dev))["pullRequest"] and e)
        number = env["pullRequest"]["number"]
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        wait_for(lambda: active_dry(client, dev) == change, what="dev at the change")
        wait_state(client, dev, "up-to-date")
        wait_for(lambda: daemon.runtime.queue.idle(), what="an idle queue")
        assert plugin.lost == 1
        assert sample("promoter_promotions_total", promoted) == before + 1
        [row] = [r for r in plugin.store.all_prs("gitops") if r["id"] == number]
        assert row["state"] == "merged"
        assert plugin.store.comments(number) == []  # never "The promoter closed this PR"
