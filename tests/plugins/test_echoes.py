"""Events that report the promoter's own writes back (v1.1) are known as its own: counted,
never applied, so they cost it no read; an event that says anything else is applied."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import ExternalPlugin, Repository, ScmProvider, parse_config
from promoter.errors import ScmOutage
from promoter.metrics import sample
from promoter.models import CommitStatus, Phase
from promoter.wiring import Daemon
from scm_plugins.external import ExternalScm
from tests.support import GitOpsRepo, wait_for

from .test_events import EXAMPLES, Sink

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]
NODE = shutil.which("node")
SHA = "d" * 40
STATUS = CommitStatus(key="promoter/previous-environment", phase=Phase.SUCCESS)


def host_of(tmp_path: Path, **settings: Any) -> ExternalScm:
    plugin = ExternalPlugin(command=MISBEHAVING, settings={"events": True, **settings})
    return ExternalScm(provider=ScmProvider(name="echoing", plugin=plugin), state_dir=str(tmp_path))


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(name="gitops", url=str(tmp_path), scm_provider="echoing")


def settled(host: ExternalScm, total: int) -> dict[tuple[str, str], int]:
    """The events' results, once ``total`` of them are counted (the reader may lag)."""
    wait_for(lambda: sum(host.event_results.values()) >= total, what=f"{total} events")
    return host.event_results


@pytest.mark.parametrize("when", ["before", "after"])
def test_the_echoes_of_a_status_and_a_pull_requests_life_are_the_promoters_own(
    tmp_path: Path, repo: Repository, when: str
) -> None:
    host, sink = host_of(tmp_path, echo=when), Sink()
    try:
        assert host.subscribe([repo], sink)
        host.set_commit_status(repo=repo, sha=SHA, status=STATUS)
        pr = host.open_pull_request(
            repo=repo, head="environment/dev-next", base="environment/dev", title="t", body="",
            labels=(),
        )  # fmt: skip
        host.update_pull_request(repo=repo, number=pr.number, title="u", body="", labels=())
        host.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )
        other = host.open_pull_request(
            repo=repo, head="environment/prod-next", base="environment/prod", title="t", body="",
            labels=(),
        )  # fmt: skip
        host.close_pull_request(repo=repo, number=other.number, comment="")
        results = settled(host, 7)
    finally:
        host.close()
    assert results == {
        ("statusChanged", "own"): 1,
        ("pullRequestChanged", "own"): 5,  # opened, updated, merged, opened, closed
        ("refMoved", "own"): 1,  # the base branch, moved to the merge commit
    }
    assert sink.seen == []


@pytest.mark.parametrize("when", ["before", "after"])
def test_an_event_that_says_otherwise_than_the_write_is_applied(
    tmp_path: Path, repo: Repository, when: str
) -> None:
    changed = ["pullRequests/update", "commitStatuses/set"]
    host, sink = host_of(tmp_path, echo=when, echoChange=changed), Sink()
    try:
        assert host.subscribe([repo], sink)
        pr = host.open_pull_request(
            repo=repo, head="environment/dev-next", base="environment/dev", title="t", body="",
            labels=(),
        )  # fmt: skip
        host.update_pull_request(repo=repo, number=pr.number, title="u", body="", labels=())
        host.set_commit_status(repo=repo, sha=SHA, status=STATUS)  # reported failed meanwhile
        results = settled(host, 3)
    finally:
        host.close()
    assert results == {
        ("pullRequestChanged", "own"): 1,
        ("pullRequestChanged", "accepted"): 1,  # closed meanwhile: news
        ("statusChanged", "accepted"): 1,
    }
    assert sink.seen == [
        ("pullRequestChanged", ("gitops", pr.number)),
        ("statusChanged", ("gitops", SHA, STATUS.key)),
    ]


def test_the_echo_of_a_write_whose_answer_failed_is_applied(
    tmp_path: Path, repo: Repository
) -> None:
    host, sink = host_of(tmp_path, echo="before", outage=["commitStatuses/set"]), Sink()
    try:
        assert host.subscribe([repo], sink)
        with pytest.raises(ScmOutage):  # the SCM may have taken it: the promoter cannot know
            host.set_commit_status(repo=repo, sha=SHA, status=STATUS)
        results = settled(host, 1)
    finally:
        host.close()
    assert results == {("statusChanged", "accepted"): 1}
    assert sink.seen == [("statusChanged", ("gitops", SHA, STATUS.key))]


def config_text(repo: Path, state: Path, events: str) -> str:
    return f"""
scmProviders:
  - name: node
    plugin:
      name: nodelocal
      directory: {EXAMPLES}
      settings: {events}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: node
    pollInterval: 0.1s
promotionStrategies:
  - name: guestbook
    repository: gitops
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod}}
daemon:
  stateDir: {state}
  resyncInterval: 1h
  workers: 2
  maxBackoff: 1s
"""


def calls() -> float:
    total = 0.0
    for operation in ("find_pull_request", "get_commit_statuses", "open_pull_request"):
        for outcome in ("success", "not_found", "unavailable", "error"):
            labels = {"provider": "node", "operation": operation, "outcome": outcome}
            total += sample("promoter_scm_calls_total", labels)
    return total


def promote(tmp_path: Path, events: str) -> float:
    """The SCM reads and opens of one change promoted to prod through the Node.js plugin."""
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", events)))
    with TestClient(daemon.app) as client:

        def active(branch: str) -> str | None:
            view = client.get("/api/v1/strategies/guestbook").json()
            env = next(e for e in view["environments"] if e["branch"] == branch)
            return (env.get("active") or {}).get("drySha")

        wait_for(lambda: active("environment/prod"), what="the first reconcile")
        queue = daemon.runtime.queue
        wait_for(lambda: queue.idle() and not queue.waiting(), what="quiet")
        before = calls()
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        wait_for(lambda: active("environment/prod") == change, what="the change in prod")
        wait_for(lambda: queue.idle() and not queue.waiting(), what="quiet")
        return calls() - before


@pytest.mark.skipif(NODE is None, reason="the Node.js example needs node")
def test_a_promotion_costs_no_more_reads_with_events_echoing_every_write_than_without(
    tmp_path: Path,
) -> None:
    without = promote(tmp_path / "v1", '{protocol: "promoter.scm/v1"}')
    echoed = promote(tmp_path / "v1.1", "{eventInterval: 0.1, eventDelay: 0.05}")
    assert echoed <= without
