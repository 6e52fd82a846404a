"""GitLab end to end: every gate is seen the moment GitLab reports it, the MR cache stays
true, and a rate limit pauses every call on the credential.

The fake GitLab sends its Pipeline Hooks as GitLab does: an *external* pipeline's hook
(source ``external``, ``builds[]`` = the commit statuses) whenever a commit status is set
through the API, and a push pipeline's hook with its jobs in ``builds[]``.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.scm_gitlab.conftest import PROJECT, TOKEN, TOKEN_ENV
from tests.scm_gitlab.fake_gitlab import FakeGitLab, FakeProject
from tests.scm_gitlab.fake_gitlab_routes import merge_mr
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .test_end_to_end import HOOK_ENV, HOOK_TOKEN, PROJECT_ID, config_text, merged_mr_hook

DEV = "environment/dev"
HOOK_AFTER = 0.05
"""Seconds from a status set through the API to its Pipeline Hook (GitLab's workers send it
after the call answered, never before)."""


SEEN = 30.0
"""Seconds within which a gate set on GitLab is acted on: only its hook can do that, the
resync being an hour away and the cached statuses trusted for a minute (how fast a hook
is acted on is a figure of the benchmarks, not a bound a loaded machine can keep)."""


def config(gitops: Path, state: Path, url: str, auto_merge: bool = True, gate: str = "lint") -> str:
    """The end-to-end configuration, with the CI job (or status) ``gate`` as the gate."""
    dev = "" if auto_merge else ", autoMerge: false"
    return config_text(gitops, state, url, gate=gate, dev=dev, resync_interval="1h")


class GitLabSide:
    """The fake GitLab and what it sends: hooks of external and push pipelines."""

    def __init__(
        self, fake: FakeGitLab, gitops: GitOpsRepo, template: dict[str, Any], fixtures: Path
    ) -> None:
        self.fake, self.gitops, self.template = fake, gitops, template
        self.fixtures = fixtures
        self.client: TestClient | None = None

    def webhook(self, name: str) -> dict[str, Any]:
        """A genuine GitLab webhook payload."""
        loaded: dict[str, Any] = json.loads(
            (self.fixtures / "gitlab" / "webhooks" / name).read_text()
        )
        return loaded

    def send(self, event: str, payload: dict[str, Any], after: float = 0.0) -> None:
        """Deliver a hook from another thread, as GitLab's own workers would, ``after``
        seconds (GitLab sends a status's hook once its API call has answered)."""
        assert self.client is not None
        client = self.client

        def post() -> None:
            try:
                answer = client.post(
                    "/webhooks/gitlab",
                    content=json.dumps(payload),
                    headers={"X-Gitlab-Event": event, "X-Gitlab-Token": HOOK_TOKEN},
                )
            except anyio.ClosedResourceError:
                return  # the test is over and its daemon stopped: the hook is lost, as then
            assert answer.status_code in (200, 202), answer.text

        timer = threading.Timer(after, post)
        timer.daemon = True
        timer.start()

    def pipeline_hook(
        self, pipeline: dict[str, Any], builds: list[dict[str, Any]]
    ) -> dict[str, Any]:
        hook = copy.deepcopy(self.template)
        hook["object_attributes"].update(
            id=pipeline["id"],
            iid=pipeline.get("iid", pipeline["id"]),
            sha=pipeline["sha"],
            status=pipeline["status"],
            source=pipeline.get("source", "push"),
            ref=pipeline.get("ref", "main"),
            finished_at=None,
        )
        build = self.template["builds"][0]
        hook["builds"] = [{**build, **b} for b in builds]
        hook["project"].update(id=PROJECT_ID, path_with_namespace=PROJECT)
        return hook

    def on_status(self, project: FakeProject, sha: str) -> None:
        """A status was set through the API: GitLab sends the external pipeline's hook."""
        pipeline = [p for p in project.pipelines if p["sha"] == sha][-1]
        latest: dict[str, dict[str, Any]] = {}
        for status in sorted(
            (s for s in project.statuses if s["sha"] == sha), key=lambda s: s["id"]
        ):
            latest[status["name"]] = status
        builds = [
            {
                "id": s["id"],
                "name": s["name"],
                "status": s["status"],
                "stage": "external",
                "allow_failure": s["allow_failure"],
                **{at: hook_time(s[at]) for at in ("created_at", "started_at", "finished_at")},
            }
            for s in latest.values()
        ]
        self.send("Pipeline Hook", self.pipeline_hook(pipeline, builds), after=HOOK_AFTER)

    def ci_job(self, branch: str, job: str, status: str) -> None:
        """A push pipeline on the proposed tip whose job ``job`` ended ``status``."""
        sha = self.gitops.tip(f"{branch}-next")
        pipeline = self.fake.add_pipeline(PROJECT, sha, status, ref=f"{branch}-next")
        for name, state in (("build", "success"), (job, status)):  # jobs are commit statuses
            self.fake.add_status(PROJECT, sha, name, state)
        jobs = [
            {"id": 1, "name": "build", "status": "success"},
            {"id": 2, "name": job, "status": status},
        ]
        self.send("Pipeline Hook", self.pipeline_hook({**pipeline, "source": "push"}, jobs))

    def external_status(self, sha: str, key: str, state: str) -> None:
        """Another system (curl, Argo CD) sets a commit status through GitLab's API."""
        import requests

        answer = requests.post(
            f"{self.fake.url}/api/v4/projects/{PROJECT_ID}/statuses/{sha}",
            headers={"PRIVATE-TOKEN": TOKEN},
            json={"state": state, "name": key},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text


def hook_time(at: str | None) -> str | None:
    """A time of GitLab's REST API (ISO 8601) as its hooks write it (``2016-08-12 15:23:28
    UTC``): each status of a hook carries its own times, not the template's."""
    if at is None:
        return None
    return datetime.fromisoformat(at.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S UTC")


def start(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> Iterator[tuple[TestClient, GitLabSide, Any]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_TOKEN)
    gitops = GitOpsRepo.create(tmp_path)
    fake = FakeGitLab(fixtures=genuine_fixtures, token=TOKEN)
    fake.add_project(PROJECT, git_dir=gitops.path, project_id=PROJECT_ID)
    template = json.loads(
        (genuine_fixtures / "gitlab" / "webhooks" / "go-gitlab" / "pipeline.json").read_text()
    )
    side = GitLabSide(fake, gitops, template, genuine_fixtures)
    fake.on_status = side.on_status
    with fake:
        daemon = Daemon(parse_config(config(gitops.path, tmp_path / "state", fake.url, **kw)))
        with TestClient(daemon.app) as client:
            side.client = client
            wait_for(lambda: env(client, "environment/prod")["state"] == "up-to-date")
            for branch in ENVIRONMENTS:
                side.external_status(gitops.tip(branch), "health", "success")
            yield client, side, daemon.runtime


def env(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
    return found


def dry(client: TestClient, branch: str) -> str | None:
    return (env(client, branch).get("active") or {}).get("drySha")


@pytest.fixture
def gitlab(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, GitLabSide, Any]]:
    yield from start(tmp_path, genuine_fixtures, monkeypatch)


def open_mr(side: GitLabSide, branch: str) -> dict[str, Any]:
    return wait_for(
        lambda: next(
            (
                m
                for m in side.fake.merge_requests(PROJECT)
                if m["target_branch"] == branch and m["state"] == "opened"
            ),
            None,
        ),
        what=f"an open MR into {branch}",
    )


def test_a_status_set_through_gitlabs_api_merges_on_its_hook(gitlab: Any) -> None:
    client, side, _ = gitlab
    change = side.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    open_mr(side, DEV)
    head = side.gitops.tip(f"{DEV}-next")
    time.sleep(0.3)  # let the daemon settle on "waiting for lint"
    assert dry(client, DEV) != change
    started = time.monotonic()
    side.external_status(head, "lint", "success")
    wait_for(lambda: dry(client, DEV) == change, timeout=SEEN, what="the merge")
    took = time.monotonic() - started
    print(f"\nlint green (set through GitLab's API) -> merged: {took * 1000:.0f} ms")


def test_a_ci_job_used_as_a_gate_merges_on_its_pipeline_hook(gitlab: Any) -> None:
    client, side, _ = gitlab
    change = side.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    open_mr(side, DEV)
    time.sleep(0.3)
    started = time.monotonic()
    side.ci_job(DEV, "lint", "success")
    wait_for(lambda: dry(client, DEV) == change, timeout=SEEN, what="the merge")
    took = time.monotonic() - started
    print(f"\nlint job green (push pipeline hook) -> merged: {took * 1000:.0f} ms")


@pytest.fixture
def manual(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, GitLabSide, Any]]:
    yield from start(tmp_path, genuine_fixtures, monkeypatch, auto_merge=False)


def test_a_person_merging_the_mr_by_hand_gets_no_comment_and_no_close(manual: Any) -> None:
    client, side, runtime = manual
    change = side.gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    mr = open_mr(side, DEV)
    side.external_status(side.gitops.tip(f"{DEV}-next"), "lint", "success")
    wait_for(lambda: env(client, DEV)["state"] == "ready", what="dev to wait for a person")
    project = side.fake.projects[PROJECT]
    answer = merge_mr(side.fake, project, mr["iid"], {})
    assert answer[0] == 200, answer
    mark = len(side.fake.requests)
    side.send("Merge Request Hook", merged_mr_hook(mr))
    side.send("Push Hook", push_hook(side, DEV))
    wait_for(lambda: dry(client, DEV) == change, what="dev to run the change")
    wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    time.sleep(0.3)
    after = side.fake.requests[mark:]
    touched = [
        (m, p) for m, p in after if f"/merge_requests/{mr['iid']}" in p and m in ("PUT", "POST")
    ]
    assert touched == []  # no note, no close, no update on the merged MR


def push_hook(side: GitLabSide, branch: str) -> dict[str, Any]:
    hook = side.webhook("drone-go-scm/push.json")
    hook.update(ref=f"refs/heads/{branch}", after=side.gitops.tip(branch))
    hook["project"].update(id=PROJECT_ID, path_with_namespace=PROJECT)
    return hook


def test_a_429_pauses_every_call_on_the_credential_and_the_api_says_when(gitlab: Any) -> None:
    client, side, _ = gitlab
    head = side.gitops.tip(DEV)
    side.fake.fail_next(
        "POST", r"/statuses/", 429, headers={"Retry-After": "2"}, body={"message": "slow down"}
    )
    answer = client.post(
        f"/api/v1/repositories/gitops/commits/{head}/statuses",
        json={"key": "health", "phase": "success"},
    )
    assert answer.status_code == 429
    assert answer.headers["Retry-After"] == "2"
    limited = next(t for t, m, p, s in side.fake.answered if s == 429)
    # Another writer on the same token, at once: refused here, nothing sent to GitLab.
    again = client.post(
        f"/api/v1/repositories/gitops/commits/{head}/statuses",
        json={"key": "health", "phase": "success"},
    )
    assert again.status_code == 429
    assert 1 <= int(again.headers["Retry-After"]) <= 2
    client.post("/api/v1/refresh", json={})  # every strategy wants to call GitLab now
    time.sleep(1.5)
    during = [t for t, m, p, s in side.fake.answered if limited < t < limited + 1.9]
    assert during == []  # nothing went out on that token before Retry-After passed
    time.sleep(0.6)
    later = client.post(
        f"/api/v1/repositories/gitops/commits/{head}/statuses",
        json={"key": "health", "phase": "success"},
    )
    assert later.status_code == 201, later.text


def test_while_a_person_waits_the_promoters_statuses_coming_back_are_not_written_again(
    manual: Any,
) -> None:
    """GitLab hands each status back in its Pipeline Hook in its own words ("success
    (pipeline #12)"): recognised as the promoter's own, none is written again."""
    client, side, runtime = manual
    side.gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    open_mr(side, DEV)
    head = side.gitops.tip(f"{DEV}-next")
    side.external_status(head, "lint", "success")
    wait_for(lambda: env(client, DEV)["state"] == "ready", what="dev to wait for a person")

    def writes() -> int:
        return sum(
            1
            for m, p in side.fake.requests
            if m == "POST" and p == f"/projects/{PROJECT_ID}/statuses/{head}"
        )

    ours = wait_for(lambda: writes() - 1 or None, what="the promoter's writes")  # lint is CI's
    for _ in range(20):  # every hook of every write heard, and reconciled
        time.sleep(0.1)
        wait_for(lambda: runtime.queue.idle(), what="an idle queue")
    assert writes() - 1 == ours <= 2  # promoter/gates: pending, then success
    shown = {s["name"]: s["description"] for s in side.fake.projects[PROJECT].statuses}
    assert shown["promoter/gates"].endswith("waiting for a person to merge")
