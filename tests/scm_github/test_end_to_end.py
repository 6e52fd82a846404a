"""End to end on GitHub: the daemon with the GitHub plugin, the fake GitHub and real git.

CI reports through GitHub (a check run or a commit status on the fake) and GitHub's
webhook tells the daemon, as in production; git refs are polled from the bare
repository. The API calls of a whole dev → staging → prod promotion are counted with
``promoter_scm_calls_total``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.config.loader import parse_config
from promoter.daemon import Runtime
from promoter.wiring import Daemon
from tests.announced import Announcements
from tests.fixture_paths import GITHUB_WEBHOOKS
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for
from webhooks.verify import GitHubSignature

from .conftest import TOKEN, TOKEN_ENV, scm_calls
from .fake_github import Call, FakeGitHub
from .genuine import Genuine

FULL_NAME = "acme/gitops"
SECRET_ENV, SECRET = "PROMOTER_E2E_GITHUB_HOOK_SECRET", "e2e-hook-secret"
PUBLIC_URL = "https://promoter.example.invalid"
FIRST_ENVIRONMENT_CALLS = (3, 4)
LATER_ENVIRONMENT_CALLS = (4, 5)
"""Charged calls from opening a promotion PR to its merge, as docs/github.md states them."""
HOOKS = GITHUB_WEBHOOKS


def config_text(
    repo: Path | str,
    state: Path,
    *,
    prod_auto_merge: bool = True,
    poll_interval: str = "0.1s",
    resync_interval: str = "30s",
) -> str:
    """The end-to-end configuration; ``repo`` is the bare repository's path or its URL."""
    return f"""
scmProviders:
  - name: github
    github: {{token: {{fromEnv: {TOKEN_ENV}}}}}
repositories:
  - name: gitops
    url: {repo}
    path: {FULL_NAME}
    scmProvider: github
    pollInterval: {poll_interval}
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod, autoMerge: {str(prod_auto_merge).lower()}}}
webhooks:
  github: {{secrets: [{{fromEnv: {SECRET_ENV}}}]}}
daemon:
  stateDir: {state}
  resyncInterval: {resync_interval}
  workers: 2
  publicUrl: {PUBLIC_URL}
"""


class GitHubCI:
    """CI as GitHub sees it: a status or check run on the fake, then GitHub's webhook."""

    def __init__(self, client: TestClient, fake: FakeGitHub) -> None:
        self.client, self.fake = client, fake
        self.announced = Announcements(lambda: len(fake.calls))
        fake.on_push = self.pushed_by_merge

    def push(self, branch: str, before: str | None, after: str, full_name: str = FULL_NAME) -> None:
        """GitHub's ``push`` webhook: ``after`` is a commit never pushed before."""
        payload = json.loads((HOOKS / "push/with-new-branch.payload.json").read_text())
        head = {**payload["head_commit"], "id": after, "distinct": True}
        payload.update(
            ref=f"refs/heads/{branch}",
            before=before or "0" * 40,
            after=after,
            created=before is None,
            head_commit=head,
            commits=[head],
        )
        self.deliver("push", payload, full_name)
        self.announced.heard(after)

    def pushed_by_merge(self, full_name: str, branch: str, before: str | None, after: str) -> None:
        """A merge moved ``branch``: GitHub's webhook follows, from another thread."""
        args = (branch, before, after, full_name)
        threading.Thread(target=self.push, args=args, daemon=True).start()

    def person_merges(self, number: int, head_sha: str) -> None:
        """A person presses "Merge" in GitHub's UI; GitHub's webhooks follow."""
        import requests

        merged = requests.put(
            f"{self.fake.base_url}/repos/{FULL_NAME}/pulls/{number}/merge",
            headers={"Authorization": f"token {TOKEN}"},
            json={"sha": head_sha},
            timeout=5,
        )
        assert merged.status_code == 200, merged.text
        payload = json.loads((HOOKS / "pull_request/closed.payload.json").read_text())
        stored = self.fake.pull(FULL_NAME, number)
        payload["pull_request"].update(
            {k: stored[k] for k in ("number", "id", "head", "base", "merged", "state")}
        )
        payload["number"] = number
        self.deliver("pull_request", payload)

    def hydrate(self, gitops: GitOpsRepo, version: str, message: str) -> str:
        """The hydrator: a dry change pushed and rendered, each moved branch announced."""
        branches = ["main", *(f"{b}-next" for b in ENVIRONMENTS)]
        before = {b: gitops.tip(b) for b in branches}
        change = gitops.change(version, message)
        for branch in branches:
            if gitops.tip(branch) != before[branch]:
                self.push(branch, before[branch], gitops.tip(branch))
        return change

    def check_run(self, sha: str, name: str, conclusion: str, full_name: str = FULL_NAME) -> None:
        self.fake.post_check_run(full_name, sha, name, "completed", conclusion)
        payload = json.loads((HOOKS / "check_run/completed.payload.json").read_text())
        run = self.fake.repositories[full_name.lower()].check_runs[sha][0]
        payload["check_run"].update({k: run[k] for k in ("name", "status", "conclusion")})
        payload["check_run"].update(head_sha=sha, completed_at=run["completed_at"])
        self.deliver("check_run", payload, full_name)

    def status(self, sha: str, context: str, state: str = "success") -> None:
        self.fake.post_status(FULL_NAME, sha, context, state)
        payload = json.loads((HOOKS / "status/payload.json").read_text())
        stored = self.fake.repositories[FULL_NAME].statuses[sha][0]
        payload.update(sha=sha, context=context, state=state, updated_at=stored["updated_at"])
        self.deliver("status", payload)

    def deliver(self, event: str, payload: dict[str, Any], full_name: str = FULL_NAME) -> None:
        payload["repository"].update(full_name=full_name, name=full_name.split("/")[1])
        for field in ("clone_url", "html_url", "git_url", "ssh_url", "url", "svn_url"):
            payload["repository"].pop(field, None)
        raw = json.dumps(payload).encode()
        response = self.client.post(
            "/webhooks/github",
            content=raw,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": GitHubSignature.sign(SECRET, raw),
                "Content-Type": "application/json",
            },
        )
        assert response.status_code == 202, response.text


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == branch)


def active_dry(client: TestClient, branch: str) -> str | None:
    return (env_view(client, branch).get("active") or {}).get("drySha")


def wait_pr(client: TestClient, branch: str, head: str | None = None) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        env = env_view(client, branch)
        pr = env.get("pullRequest")
        if not pr or (head and env["proposed"]["hydratedSha"] != head):
            return None
        return env

    return wait_for(check, what=f"a PR for {branch}")


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def fake(genuine: Genuine, gitops: GitOpsRepo) -> Iterator[FakeGitHub]:
    with FakeGitHub(genuine, tokens=(TOKEN,)) as github:
        github.add_repository(FULL_NAME, gitops.path)
        yield github


@pytest.fixture
def ci(
    fake: FakeGitHub,
    gitops: GitOpsRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[GitHubCI]:
    """The daemon and CI; ``prod_auto_merge`` through indirect parametrisation."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    auto = getattr(request, "param", True)
    text = config_text(gitops.path, tmp_path / "state", prod_auto_merge=auto)
    daemon = Daemon(parse_config(text))
    runtime = daemon.runtime
    with TestClient(daemon.app) as client:
        client.runtime = runtime  # type: ignore[attr-defined]
        wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
        robot = GitHubCI(client, fake)
        for branch in ENVIRONMENTS:
            robot.status(gitops.tip(branch), "health")
        yield robot


def promoted(client: TestClient, branch: str, change: str) -> bool:
    return active_dry(client, branch) == change


def promote_through(ci: GitHubCI, gitops: GitOpsRepo, change: str) -> None:
    for branch in ENVIRONMENTS:
        env = wait_pr(ci.client, branch)
        ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
        wait_for(partial(promoted, ci.client, branch, change), what=f"{branch} promoted")
        ci.status(gitops.tip(branch), "health")


def through_staging(ci: GitHubCI, gitops: GitOpsRepo, change: str) -> None:
    """Promote ``change`` through dev and staging, CI and health green on the way."""
    for branch in ENVIRONMENTS[:2]:
        env = wait_pr(ci.client, branch)
        ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
        wait_for(partial(promoted, ci.client, branch, change), what=f"{branch} promoted")
        ci.status(gitops.tip(branch), "health")


def open_to_merge(fake: FakeGitHub, pr: dict[str, Any]) -> list[Call]:
    """The charged calls about one PR, from the POST that opened it to its merge."""
    number, head = pr["number"], pr["head"]["sha"]
    opened = next(
        i
        for i, c in enumerate(fake.calls)
        if (c.method, c.status) == ("POST", 201)
        and c.path.endswith("/pulls")
        and c.body["base"] == pr["base"]["ref"]
    )
    merged = next(
        i
        for i, c in enumerate(fake.calls)
        if c.method == "PUT" and c.path.endswith(f"/pulls/{number}/merge") and c.status == 200
    )
    mine = (f"/pulls/{number}", f"/issues/{number}/", head)
    return [
        c
        for c in fake.calls[opened : merged + 1]
        if c.status != 304
        and (c is fake.calls[opened] or any(m in c.path for m in mine) or about(c, head))
    ]


def about(call: Call, sha: str) -> bool:
    """A GraphQL read of ``sha``'s gates (its path names no commit)."""
    body = call.body if isinstance(call.body, dict) else {}
    return call.path == "/graphql" and (body.get("variables") or {}).get("sha") == sha


def test_a_change_goes_dev_to_staging_to_prod_through_github_pull_requests(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    calls, charged = scm_calls(), fake.charged()
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    promote_through(ci, gitops, change)
    prs = fake.pulls_of(FULL_NAME)
    assert sorted((pr["base"]["ref"], pr["merged"]) for pr in prs) == [
        (b, True) for b in sorted(ENVIRONMENTS)
    ]
    for pr in prs:
        branch = pr["base"]["ref"]
        assert pr["labels"] == []  # none configured: no labelling call
        parents = git(gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents == [parents[0], pr["head"]["sha"]]
        assert pr["merge_commit_sha"] == gitops.tip(branch)
    staging = next(p for p in prs if p["base"]["ref"] == "environment/staging")
    own = fake.repositories[FULL_NAME].statuses[staging["head"]["sha"]]
    # Written once, when decided (dev healthy on the change): never pending, then success.
    assert [(s["context"], s["state"]) for s in own] == [
        ("promoter/previous-environment", "success"),
    ]
    assert own[0]["target_url"] == f"{PUBLIC_URL}/strategies/guestbook"

    per_env = (scm_calls() - calls) / len(ENVIRONMENTS)
    charged_per_env = (fake.charged() - charged) / len(ENVIRONMENTS)
    windows = {pr["base"]["ref"]: len(open_to_merge(fake, pr)) for pr in prs}
    print(
        f"\nGitHub API calls per environment promotion: {per_env:.1f} counted, "
        f"{charged_per_env:.1f} charged (the rest were 304 Not Modified); "
        f"from opening the PR to its merge: {windows}"
    )
    first, *later = ENVIRONMENTS
    assert FIRST_ENVIRONMENT_CALLS[0] <= windows[first] <= FIRST_ENVIRONMENT_CALLS[1]
    for branch in later:
        assert LATER_ENVIRONMENT_CALLS[0] <= windows[branch] <= LATER_ENVIRONMENT_CALLS[1]
    assert charged_per_env <= 8  # polled: new heads are read (see test_webhook_driven_calls)


@pytest.mark.parametrize("ci", [False], indirect=True)
def test_a_pr_left_to_a_person_carries_a_summary_check_of_the_promoters_gates(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    change = gitops.change("2.0.0", "Bump guestbook to 2.0.0")
    through_staging(ci, gitops, change)
    head = wait_pr(ci.client, "environment/prod")["proposed"]["hydratedSha"]

    def summary() -> dict[str, Any] | None:
        statuses = fake.repositories[FULL_NAME].statuses.get(head, [])
        return next((s for s in statuses if s["context"] == "promoter/gates"), None)

    waiting = wait_for(summary, what="the summary check")
    assert waiting["state"] == "pending"
    assert waiting["description"] == ("waiting until these pass: ci, promoter/previous-environment")
    assert waiting["target_url"] == f"{PUBLIC_URL}/strategies/guestbook"
    ci.check_run(head, "ci", "success")
    ready = wait_for(
        lambda: (s := summary()) is not None and s["state"] == "success" and s,
        what="the summary turning green",
    )
    assert ready["description"] == (
        "every gate passes: ci, promoter/previous-environment; waiting for a person to merge"
    )
    prod = next(p for p in fake.pulls_of(FULL_NAME) if p["base"]["ref"] == "environment/prod")
    assert prod["state"] == "open" and not prod["merged"]
    staging = next(p for p in fake.pulls_of(FULL_NAME) if p["base"]["ref"] == "environment/staging")
    own = fake.repositories[FULL_NAME].statuses[staging["head"]["sha"]]
    # merged by the promoter, whose gates all had checks of their own: no summary
    assert {s["context"] for s in own} == {"promoter/previous-environment"}


def test_a_failing_check_blocks_the_promotion(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    before = active_dry(ci.client, "environment/dev")
    gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    env = wait_pr(ci.client, "environment/dev")
    ci.check_run(env["proposed"]["hydratedSha"], "ci", "failure")
    blocked = wait_for(
        lambda: (e := env_view(ci.client, "environment/dev"))["state"] == "blocked" and e,
        what="dev blocked",
    )
    assert "ci" in blocked["reason"]
    assert active_dry(ci.client, "environment/dev") == before
    assert not [c for c in fake.calls if c.method == "PUT"]


def test_a_merge_refused_because_the_head_moved_is_retried_after_reading_the_new_head(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    env = wait_pr(ci.client, "environment/dev")
    moved: list[str] = []

    def hydrator_pushes_during_the_merge(method: str, path: str) -> None:
        if method == "PUT" and path.endswith("/merge") and not moved:
            moved.append(gitops.change("1.4.0", "Bump guestbook to 1.4.0"))

    fake.on_request = hydrator_pushes_during_the_merge
    ci.check_run(env["proposed"]["hydratedSha"], "ci", "success")
    wait_for(lambda: moved, what="the merge attempt")
    fake.on_request = None
    new_head = gitops.tip("environment/dev-next")
    wait_pr(ci.client, "environment/dev", head=new_head)
    ci.check_run(new_head, "ci", "success")
    wait_for(lambda: active_dry(ci.client, "environment/dev") == moved[0], what="dev at 1.4.0")
    merges = [c for c in fake.calls if c.method == "PUT" and c.path.endswith("/merge")]
    assert [c.status for c in merges] == [409, 200]
    assert merges[1].body["sha"] == new_head
    between = [c for c in fake.calls if merges[0].at < c.at < merges[1].at]
    assert any(c.method == "GET" for c in between)  # read again before trying again


def test_a_secondary_rate_limit_is_waited_out(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    fake.rate_limit_next("POST", r"/pulls$", retry_after=1)
    gitops.change("1.5.0", "Bump guestbook to 1.5.0")
    wait_pr(ci.client, "environment/dev")
    opens = [c for c in fake.calls if c.method == "POST" and c.path.endswith("/pulls")]
    assert [c.status for c in opens][:2] == [403, 201]
    assert opens[1].at - opens[0].at >= 0.9
    assert scm_calls(operation="open_pull_request", outcome="rate_limited") >= 1


def test_an_idle_daemon_spends_no_rate_limit(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    runtime: Runtime = ci.client.runtime  # type: ignore[attr-defined]
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    runtime.reconciler.status_cache.ttl = 0.0  # every status read goes to GitHub...
    runtime.settled.unsettle("guestbook")  # ...settled commits' too
    runtime.reconciler.reconcile("guestbook")
    charged, counted = fake.charged(), scm_calls()
    for _ in range(3):
        runtime.settled.unsettle("guestbook")
        runtime.reconciler.reconcile("guestbook")
    assert scm_calls() > counted  # it did ask GitHub...
    assert fake.charged() == charged  # ...and every answer was 304 Not Modified


@pytest.mark.parametrize("ci", [False], indirect=True)
def test_a_person_merging_the_prod_pr_gets_no_comment_and_no_patch_afterwards(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    change = gitops.change("3.0.0", "Bump guestbook to 3.0.0")
    through_staging(ci, gitops, change)
    prod = wait_pr(ci.client, "environment/prod")
    ci.check_run(prod["proposed"]["hydratedSha"], "ci", "success")
    wait_for(
        lambda: env_view(ci.client, "environment/prod")["state"] == "ready",
        what="prod to wait for a person",
    )
    number = prod["pullRequest"]["number"]
    mark = len(fake.calls)
    ci.person_merges(number, prod["proposed"]["hydratedSha"])
    wait_for(partial(promoted, ci.client, "environment/prod", change), what="prod runs it")
    wait_for(lambda: ci.client.runtime.queue.idle(), what="an idle queue")  # type: ignore[attr-defined]
    time.sleep(0.3)
    touched = [
        (c.method, c.path)
        for c in fake.calls[mark:]
        if c.method in ("PATCH", "POST")
        and (f"/pulls/{number}" in c.path or f"/issues/{number}/" in c.path)
    ]
    assert touched == []
    assert fake.comments_of(FULL_NAME, number) == []


@pytest.mark.parametrize("ci", [False], indirect=True)
def test_a_forged_success_on_the_promoters_summary_check_is_corrected(
    ci: GitHubCI, fake: FakeGitHub, gitops: GitOpsRepo
) -> None:
    change = gitops.change("2.1.0", "Bump guestbook to 2.1.0")
    through_staging(ci, gitops, change)
    head = wait_pr(ci.client, "environment/prod")["proposed"]["hydratedSha"]

    def summary() -> str | None:
        statuses = fake.repositories[FULL_NAME].statuses.get(head, [])
        return next((s["state"] for s in statuses if s["context"] == "promoter/gates"), None)

    wait_for(lambda: summary() == "pending", what="the summary check")
    ci.status(head, "promoter/gates", "success")  # someone else writes it, GitHub tells us
    wait_for(lambda: summary() == "pending", what="the forged success corrected")
    summaries = [
        s["state"]
        for s in fake.repositories[FULL_NAME].statuses[head]
        if s["context"] == "promoter/gates"
    ]
    assert summaries[:3] == ["pending", "success", "pending"]  # newest first


def test_what_the_client_cached_about_commits_no_environment_runs_any_more_is_let_go(
    ci: GitHubCI, gitops: GitOpsRepo
) -> None:
    runtime = ci.client.runtime  # type: ignore[attr-defined]
    plugin = runtime.plugins["github"]
    cache, read = plugin._pulls._api.client._etags, plugin._statuses._read_once
    before = {branch: gitops.tip(branch) for branch in ENVIRONMENTS}
    wait_for(  # a commit's first read is one GraphQL request: it is remembered as read
        lambda: all((FULL_NAME, sha) in read for sha in before.values()),
        what="the running commits' statuses read",
    )
    promote_through(ci, gitops, gitops.change("1.2.0", "Bump guestbook to 1.2.0"))
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    left = [
        b
        for b, sha in before.items()
        if (FULL_NAME, sha) in read or any(f"/commits/{sha}" in k for k in cache)
    ]
    assert left == []
