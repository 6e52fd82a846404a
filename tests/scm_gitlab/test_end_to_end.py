"""End to end with GitLab: the daemon, this plugin, the fake GitLab and real git merges.

The fake serves the REST API; the repository is a local bare one that the daemon
mirrors with git and that the fake merges into. CI is played by the test: it
adds a pipeline to the fake and delivers GitLab's Pipeline Hook to the daemon,
as GitLab would. ``health`` reaches the daemon through its own API (which writes
it to GitLab as a commit status), as Argo CD would report it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.config.loader import parse_config
from promoter.daemon import Runtime
from promoter.wiring import Daemon
from tests.announced import Announcements
from tests.fixture_paths import FIXTURES
from tests.scm_gitlab.conftest import PROJECT, TOKEN, TOKEN_ENV, scm_calls
from tests.scm_gitlab.fake_gitlab import FakeGitLab
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

HOOK_TOKEN = "hook-token-e2e"
HOOK_ENV = "PROMOTER_TEST_GITLAB_HOOK_TOKEN"
PROJECT_ID = 4242


def config_text(
    gitops: Path,
    state: Path,
    url: str,
    *,
    gate: str = "pipeline",
    dev: str = "",
    prod: str = "",
    poll_interval: str = "0.1s",
    resync_interval: str = "60s",
) -> str:
    """The e2e configuration: ``gate`` is the proposed gate, ``dev`` more settings of dev."""
    return f"""
scmProviders:
  - name: gitlab
    gitlab: {{url: "{url}", token: {{fromEnv: {TOKEN_ENV}}}}}
repositories:
  - name: gitops
    url: {gitops}
    path: {PROJECT}
    projectId: {PROJECT_ID}
    scmProvider: gitlab
    pollInterval: {poll_interval}
promotionStrategies:
  - name: guestbook
    repository: gitops
    labels: [promotion]
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: {gate}}}]
    environments:
      - {{branch: environment/dev{dev}}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod{prod}}}
webhooks:
  gitlab:
    tokens: [{{fromEnv: {HOOK_ENV}}}]
daemon:
  stateDir: {state}
  workers: 2
  resyncInterval: {resync_interval}
"""


def merged_mr_hook(mr: dict[str, Any]) -> dict[str, Any]:
    """GitLab's Merge Request Hook for ``mr`` merged (a genuine payload, fields filled)."""
    path = FIXTURES / "gitlab/webhooks/drone-go-scm/pull_request_merge.json"
    hook: dict[str, Any] = json.loads(path.read_text())
    hook["object_attributes"].update(
        iid=mr["iid"],
        id=mr["id"],
        action="merge",
        state="merged",
        source_branch=mr["source_branch"],
        target_branch=mr["target_branch"],
    )
    hook["project"].update(id=PROJECT_ID, path_with_namespace=PROJECT)
    return hook


class Harness:
    """The daemon's client, the fake GitLab and the GitOps repository, with CI's moves."""

    def __init__(
        self, runtime: Runtime, client: TestClient, fake: FakeGitLab, gitops: GitOpsRepo, hook: Any
    ) -> None:
        self.runtime = runtime
        self.client = client
        self.fake = fake
        self.gitops = gitops
        self._hook = hook
        self.status_posts = 0
        fake.on_push = self.pushed_by_merge
        self.announced = Announcements(lambda: len(fake.requests))

    def push(self, branch: str, before: str, after: str) -> None:
        """GitLab's Push Hook for ``branch`` moving from ``before`` to ``after``."""
        payload = json.loads((FIXTURES / "gitlab/webhooks/go-gitlab/push.json").read_text())
        commit = {**payload["commits"][-1], "id": after}
        payload.update(
            ref=f"refs/heads/{branch}",
            before=before,
            after=after,
            checkout_sha=after,
            commits=[commit],
            total_commits_count=1,
            project_id=PROJECT_ID,
        )
        payload["project"].update(id=PROJECT_ID, path_with_namespace=PROJECT)
        answer = self.client.post(
            "/webhooks/gitlab",
            content=json.dumps(payload),
            headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": HOOK_TOKEN},
        )
        assert answer.status_code in (200, 202), answer.text
        self.announced.heard(after)

    def pushed_by_merge(self, project: Any, branch: str, before: str, after: str) -> None:
        """A merge moved ``branch``: GitLab's hook follows, from another thread."""
        threading.Thread(target=self.push, args=(branch, before, after), daemon=True).start()

    def person_merges(self, mr: dict[str, Any]) -> None:
        """A person presses "Merge" in GitLab's UI; GitLab's hooks follow."""
        from tests.scm_gitlab.fake_gitlab_routes import merge_mr

        answer = merge_mr(self.fake, self.fake.projects[PROJECT], mr["iid"], {})
        assert answer[0] == 200, answer
        posted = self.client.post(
            "/webhooks/gitlab",
            content=json.dumps(merged_mr_hook(mr)),
            headers={"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": HOOK_TOKEN},
        )
        assert posted.status_code in (200, 202), posted.text

    def hydrate(self, version: str, message: str) -> str:
        """The hydrator: a dry change pushed and rendered, each moved branch announced."""
        branches = ["main", *(f"{b}-next" for b in ENVIRONMENTS)]
        before = {b: self.gitops.tip(b) for b in branches}
        change = self.gitops.change(version, message)
        for branch in branches:
            if self.gitops.tip(branch) != before[branch]:
                self.push(branch, before[branch], self.gitops.tip(branch))
        return change

    def env(self, branch: str) -> dict[str, Any]:
        view = self.client.get("/api/v1/strategies/guestbook").json()
        found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
        return found

    def active_dry(self, branch: str) -> str | None:
        return (self.env(branch).get("active") or {}).get("drySha")

    def wait_state(self, branch: str, state: str) -> dict[str, Any]:
        return wait_for(
            lambda: (e := self.env(branch))["state"] == state and e, what=f"{branch} {state}"
        )

    def health(self, branch: str) -> None:
        sha = self.gitops.tip(branch)
        answer = self.client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": "health", "phase": "success"},
        )
        assert answer.status_code == 201, answer.text
        self.status_posts += 1

    def pipeline(self, branch: str, status: str) -> None:
        """CI finished on the proposed branch's tip: a pipeline in GitLab, and its hook."""
        sha = self.gitops.tip(f"{branch}-next")
        pipeline = self.fake.add_pipeline(PROJECT, sha, status, ref=f"{branch}-next")
        hook = json.loads(json.dumps(self._hook))
        hook["object_attributes"].update(
            id=pipeline["id"],
            iid=pipeline["iid"],
            sha=sha,
            status=status,
            source="push",
            ref=f"{branch}-next",
        )
        hook["project"].update(id=PROJECT_ID, path_with_namespace=PROJECT)
        answer = self.client.post(
            "/webhooks/gitlab",
            content=json.dumps(hook),
            headers={"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": HOOK_TOKEN},
        )
        assert answer.status_code in (200, 202), answer.text

    def settle(self) -> None:
        wait_for(lambda: self.runtime.queue.idle(), what="an idle queue")

    def mrs(self, branch: str) -> list[dict[str, Any]]:
        return [m for m in self.fake.merge_requests(PROJECT) if m["target_branch"] == branch]

    def open_mr(self, branch: str) -> dict[str, Any]:
        return wait_for(
            lambda: next((m for m in self.mrs(branch) if m["state"] == "opened"), None),
            what=f"an open MR into {branch}",
        )


@pytest.fixture
def harness(
    tmp_path: Path,
    genuine_fixtures: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[Harness]:
    """The daemon, the fake and CI; the ref poll interval through indirect parametrisation."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_TOKEN)
    gitops = GitOpsRepo.create(tmp_path)
    fake = FakeGitLab(fixtures=genuine_fixtures, token=TOKEN)
    fake.add_project(PROJECT, git_dir=gitops.path, project_id=PROJECT_ID)
    hook = json.loads(
        (genuine_fixtures / "gitlab" / "webhooks" / "go-gitlab" / "pipeline.json").read_text()
    )
    with fake:
        poll = getattr(request, "param", "0.1s")
        text = config_text(gitops.path, tmp_path / "state", fake.url, poll_interval=poll)
        daemon = Daemon(parse_config(text))
        runtime = daemon.runtime
        with TestClient(daemon.app) as client:
            h = Harness(runtime, client, fake, gitops, hook)
            h.announced.watch_reads(monkeypatch)
            h.wait_state("environment/prod", "up-to-date")
            for branch in ENVIRONMENTS:
                h.health(branch)
            h.settle()
            yield h


def promote(h: Harness, branch: str, change: str) -> None:
    h.open_mr(branch)
    h.pipeline(branch, "success")
    wait_for(lambda: h.active_dry(branch) == change, what=f"{branch} at the change")
    h.health(branch)


def test_a_change_goes_dev_staging_prod_through_gitlab_merge_requests(harness: Harness) -> None:
    h = harness
    before = scm_calls()
    ops_before = _operations()
    change = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        target_before = h.gitops.tip(branch)
        promote(h, branch, change)
        [mr] = h.mrs(branch)
        assert mr["state"] == "merged"
        assert set(mr["labels"]) >= {"promotion"}
        parents = git(h.gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents == [target_before, h.gitops.tip(f"{branch}-next")]
    h.wait_state("environment/prod", "up-to-date")
    used = scm_calls() - before - h.status_posts
    print(f"\nGitLab API calls per environment promotion: {used / len(ENVIRONMENTS):.1f}")
    after = _operations()
    snapshot, _ = h.runtime.reconciler.read_and_decide("guestbook")  # after the count
    assert snapshot.folded_keys == {"pipeline"}
    for op in sorted(after):
        print(f"  {op}: {after[op] - ops_before.get(op, 0)}")


@pytest.mark.parametrize("harness", ["1h"], indirect=True)  # pushes come by Push Hook
def test_with_push_hooks_each_environment_costs_at_most_four_calls(harness: Harness) -> None:
    h = harness
    before, posts, ops_before = scm_calls(), h.status_posts, _operations()
    mark = len(h.fake.requests)
    change = h.hydrate("1.2.0", "Bump guestbook to 1.2.0")
    for branch in ENVIRONMENTS:
        promote(h, branch, change)
    h.settle()
    used = scm_calls() - before - (h.status_posts - posts)
    ops = {op: n - ops_before.get(op, 0) for op, n in _operations().items()}
    # A push of several branches brings one hook per branch: the first one's reconcile
    # may read another branch's new tip before its hook arrives (an SCM read is right).
    early = early_reads(h, mark)
    assert set(early.values()) <= {h.gitops.tip(f"{b}-next") for b in ENVIRONMENTS}, early
    assert used - len(early) <= 4 * len(ENVIRONMENTS), (ops, early)
    # The commits the Push Hooks announced (proposed heads, merge commits) are not read:
    # the one pipeline read per environment is the re-read just before its merge.
    statuses_early = sum(1 for path in early if "/statuses" in path)
    assert ops.get("list_commit_statuses", 0) == statuses_early, (ops, early)
    assert ops.get("list_pipelines", 0) - (len(early) - statuses_early) == len(ENVIRONMENTS), (
        ops,
        early,
    )


def early_reads(h: Harness, since: int) -> dict[str, str]:
    """``"index path" -> SHA`` of the status and pipeline reads since request ``since`` of
    a commit made before (or while) its Push Hook came in."""
    requests = h.fake.requests
    reads = []
    for i, (method, path) in enumerate(requests[since:], since):
        hit = re.search(r"/commits/([0-9a-f]{40})/statuses|/pipelines\?.*sha=([0-9a-f]{40})", path)
        if method == "GET" and hit:
            reads.append((i, hit.group(1) or hit.group(2)))
    return {f"{i} {requests[i][1]}": sha for i, sha in h.announced.early(reads).items()}


def _operations() -> dict[str, float]:
    from promoter.metrics import REGISTRY

    found: dict[str, float] = {}
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name == "promoter_scm_calls_total" and s.labels.get("provider") == "gitlab":
                op = s.labels["operation"]
                found[op] = found.get(op, 0) + s.value
    return found


def test_a_failed_pipeline_blocks_the_environment_and_says_why(harness: Harness) -> None:
    h = harness
    before = h.active_dry("environment/dev")
    h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    mr = h.open_mr("environment/dev")
    h.pipeline("environment/dev", "failed")
    blocked = h.wait_state("environment/dev", "blocked")
    assert "pipeline" in blocked["reason"]
    h.settle()
    assert h.active_dry("environment/dev") == before
    assert [m["state"] for m in h.mrs("environment/dev") if m["iid"] == mr["iid"]] == ["opened"]


def test_a_refused_merge_is_retried_after_reading_again(harness: Harness) -> None:
    h = harness
    refused = scm_calls(operation="merge_pull_request", outcome="conflict")
    h.fake.fail_next("PUT", r"/merge$", 405, body={"message": "405 Method Not Allowed"}, times=1)
    change = h.gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    promote(h, "environment/dev", change)
    assert scm_calls(operation="merge_pull_request", outcome="conflict") == refused + 1
    assert [m["state"] for m in h.mrs("environment/dev")] == ["merged"]


def test_a_429_is_waited_out_before_the_next_call(harness: Harness) -> None:
    h = harness
    waited = scm_calls(outcome="rate_limited")
    h.fake.fail_next(
        "POST", r"/merge_requests$", 429, headers={"Retry-After": "1"}, body={"message": "slow"}
    )
    change = h.gitops.change("1.4.0", "Bump guestbook to 1.4.0")
    promote(h, "environment/dev", change)
    limited = next(t for t, m, p, s in h.fake.answered if s == 429)
    after = [t for t, m, p, s in h.fake.answered if t > limited]
    assert after and after[0] - limited >= 0.9, "no GitLab call before Retry-After passed"
    assert scm_calls(outcome="rate_limited") == waited + 1
