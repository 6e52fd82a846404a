"""Events from plugins (promoter.scm/v1.1): validated, limited to subscribed repositories, and
waking strategies like a webhook would."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import ExternalPlugin, Repository, ScmProvider, parse_config
from promoter.metrics import sample
from promoter.models import CommitStatus, PullRequest
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from tests.support import GitOpsRepo, wait_for

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
NODE = shutil.which("node")
SHA = "c" * 40


class Sink:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def ref_moved(
        self, *, repository: str, ref: str, before: str | None, after: str | None
    ) -> None:
        self.seen.append(("refMoved", (repository, ref, before, after)))

    def status_changed(self, *, repository: str, sha: str, status: CommitStatus) -> None:
        self.seen.append(("statusChanged", (repository, sha, status.key)))

    def pull_request_changed(self, *, repository: str, pull_request: PullRequest) -> None:
        self.seen.append(("pullRequestChanged", (repository, pull_request.number)))


def events(result: str) -> float:
    labels = {"provider": "evented", "event": "refMoved", "result": result}
    return sample("promoter_plugin_events_total", labels)


def test_a_plugins_events_reach_the_sink_only_when_valid_and_about_a_subscribed_repository(
    tmp_path: Path,
) -> None:
    moved = {"repository": "gitops", "ref": "refs/heads/environment/dev", "after": SHA}
    notify = [
        ["events/refMoved", moved],
        ["events/refMoved", {**moved, "repository": "someone-elses"}],
        ["events/refMoved", {"repository": "gitops"}],  # no ref
        [
            "events/statusChanged",
            {"repository": "gitops", "sha": SHA, "status": {"key": "ci", "phase": "success"}},
        ],
    ]
    settings = {"events": True, "notify": notify, "early": True}
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings)
    before = {r: events(r) for r in ("accepted", "ignored", "invalid")}
    host = ExternalScm(provider=ScmProvider(name="evented", plugin=plugin), state_dir=str(tmp_path))
    sink = Sink()
    try:
        assert host.sends_events
        repo = Repository(name="gitops", url=str(tmp_path), scm_provider="evented")
        assert host.subscribe([repo], sink)
        wait_for(lambda: len(sink.seen) == 2, what="the two valid events")
        assert sink.seen == [
            ("refMoved", ("gitops", "refs/heads/environment/dev", None, SHA)),
            ("statusChanged", ("gitops", SHA, "ci")),
        ]  # and none of those written before the subscription
        assert events("accepted") == before["accepted"] + 1
        assert events("ignored") == before["ignored"] + 1
        assert events("invalid") == before["invalid"] + 1
    finally:
        host.close()


def test_a_plugin_that_picked_protocol_v1_is_never_subscribed(tmp_path: Path) -> None:
    record = tmp_path / "calls"
    settings = {"events": True, "protocol": "promoter.scm/v1", "record": str(record)}
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings)
    host = ExternalScm(provider=ScmProvider(name="old", plugin=plugin), state_dir=str(tmp_path))
    try:
        repo = Repository(name="gitops", url=str(tmp_path), scm_provider="old")
        assert host.subscribe([repo], Sink()) is False
        assert host.get_commit_statuses(repo=repo, sha=SHA) == []
    finally:
        host.close()
    assert "events/subscribe" not in record.read_text()


def config_text(repo: Path, state: Path) -> str:
    return f"""
scmProviders:
  - name: node
    plugin:
      name: nodelocal
      directory: {EXAMPLES}
      settings: {{eventInterval: 0.2}}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: node
promotionStrategies:
  - name: guestbook
    repository: gitops
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
daemon:
  stateDir: {state}
  resyncInterval: 1h
  workers: 2
  maxBackoff: 1s
"""


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
    return found


@pytest.mark.skipif(NODE is None, reason="the Node.js example needs node")
def test_a_push_reported_by_the_node_plugins_events_promotes_without_polling_or_resync(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state")))
    with TestClient(daemon.app) as client:
        wait_for(lambda: env_view(client, "environment/staging")["state"] == "up-to-date")
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        wait_for(
            lambda: (
                (env_view(client, "environment/staging").get("active") or {}).get("drySha")
                == change
            ),
            what="the change promoted to staging, woken by the plugin's events only",
        )
