"""CI, CD, the hydrator and people as each Bitbucket sees them, for the end-to-end tests and
the benchmark: each writes to the fake, then the fake's signed webhook reaches the daemon.

Bitbucket Cloud: pushes (``repo:push``), builds (a status on the fake, then
``repo:commit_status_created``). Data Center: pushes (``repo:refs_changed``); it sends no
build-status events, so CI reports through the daemon's API, which writes the status to
Data Center. Deliveries are the genuine ones of ``tests/fixtures/bitbucket-*/webhooks``
with their fields filled in.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import requests
from starlette.testclient import TestClient

from tests.fixture_paths import FIXTURES
from tests.support import ENVIRONMENTS, GitOpsRepo
from webhooks import BitbucketCloud, BitbucketDataCenter

from .conftest import (
    PASSWORD,
    PASSWORD_ENV,
    PROJECT_REPO,
    TOKEN,
    TOKEN_ENV,
    USERNAME,
    WORKSPACE_REPO,
)
from .fake_cloud import FakeCloud
from .fake_datacenter import FakeDataCenter

HOOK_ENV, HOOK_SECRET = "PROMOTER_TEST_BITBUCKET_HOOK", "bitbucket-hook-secret-0123"
OLD_HOOK_ENV, OLD_HOOK_SECRET = "PROMOTER_TEST_BITBUCKET_OLD_HOOK", "bitbucket-old-secret-4567"
PRODUCTS = ("cloud", "datacenter")


def config_text(
    product: str,
    repo: Path,
    state: Path,
    url: str,
    *,
    poll_interval: str = "0.1s",
    prod: str = "",
    staging: str = "",
) -> str:
    """The guestbook strategy on one fake Bitbucket, its webhooks signed with two secrets
    (one being rotated out); ``prod``/``staging``: more settings of those environments."""
    if product == "cloud":
        provider = (
            f'bitbucketCloud: {{url: "{url}", username: {USERNAME}, '
            f"password: {{fromEnv: {PASSWORD_ENV}}}, rateLimitWait: 1s}}"
        )
        path, hooks = WORKSPACE_REPO, "bitbucketCloud"
    else:
        provider = f'bitbucketDataCenter: {{url: "{url}", token: {{fromEnv: {TOKEN_ENV}}}}}'
        path, hooks = PROJECT_REPO, "bitbucketDataCenter"
    return f"""
scmProviders:
  - name: bitbucket
    {provider}
repositories:
  - name: gitops
    url: {repo}
    path: {path}
    scmProvider: bitbucket
    pollInterval: {poll_interval}
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging{staging}}}
      - {{branch: environment/prod{prod}}}
webhooks:
  {hooks}: {{secrets: [{{fromEnv: {HOOK_ENV}}}, {{fromEnv: {OLD_HOOK_ENV}}}]}}
daemon:
  stateDir: {state}
  workers: 2
  maxBackoff: 1s
"""


def environ() -> dict[str, str]:
    return {
        PASSWORD_ENV: PASSWORD,
        TOKEN_ENV: TOKEN,
        HOOK_ENV: HOOK_SECRET,
        OLD_HOOK_ENV: OLD_HOOK_SECRET,
    }


def _genuine(product: str, name: str) -> dict[str, Any]:
    folder = "bitbucket-cloud" if product == "cloud" else "bitbucket-datacenter"
    data: dict[str, Any] = json.loads((FIXTURES / folder / "webhooks" / name).read_text())
    return data


class BitbucketCI:
    """What happens around the promoter on one Bitbucket product."""

    def __init__(self, product: str, client: TestClient, fake: FakeCloud | FakeDataCenter) -> None:
        self.product, self.client, self.fake = product, client, fake
        self.full_name = WORKSPACE_REPO if product == "cloud" else PROJECT_REPO
        self.status_posts = 0
        self.delivered: list[int] = []
        fake.on_push = self.pushed_by_merge

    # --- deliveries --------------------------------------------------------------------

    def deliver(self, event: str, payload: dict[str, Any], *, secret: str = HOOK_SECRET) -> int:
        raw = json.dumps(payload).encode()
        signer = BitbucketCloud if self.product == "cloud" else BitbucketDataCenter
        id_header = "X-Request-UUID" if self.product == "cloud" else "X-Request-Id"
        answer = self.client.post(
            f"/webhooks/bitbucket-{self.product}",
            content=raw,
            headers={
                "X-Event-Key": event,
                id_header: str(uuid.uuid4()),
                "X-Hub-Signature": signer.sign(secret, raw),
                "Content-Type": "application/json",
            },
        )
        self.delivered.append(answer.status_code)
        return answer.status_code

    def _repository(self, payload: dict[str, Any]) -> None:
        if self.product == "cloud":
            repo = payload["repository"]
            repo.update(full_name=self.full_name, name=self.full_name.split("/")[1])
            repo.setdefault("links", {})["html"] = {"href": f"{self.fake.url}/{self.full_name}"}
        else:
            project, slug = self.full_name.split("/")
            payload["repository"].update(slug=slug, name=slug)
            payload["repository"]["project"].update(key=project, name=project)

    def push_payload(self, branch: str, before: str | None, after: str) -> tuple[str, Any]:
        if self.product == "cloud":
            payload = _genuine("cloud", "push.json")
            change = payload["push"]["changes"][0]
            change["new"]["name"] = change["old"]["name"] = branch
            change["new"]["target"]["hash"] = after
            change["old"]["target"]["hash"] = before or "0" * 40
            change["commits"] = [{**change["commits"][0], "hash": after}]
            event = "repo:push"
        else:
            payload = _genuine("datacenter", "push.json")
            payload["changes"][0].update(
                refId=f"refs/heads/{branch}", fromHash=before or "0" * 40, toHash=after
            )
            payload["changes"][0]["ref"].update(id=f"refs/heads/{branch}", displayId=branch)
            event = "repo:refs_changed"
        self._repository(payload)
        return event, payload

    def push(self, branch: str, before: str | None, after: str) -> None:
        event, payload = self.push_payload(branch, before, after)
        assert self.deliver(event, payload) in (200, 202)

    def pushed_by_merge(self, full_name: str, branch: str, before: str, after: str) -> None:
        """A merge moved ``branch``: Bitbucket's push webhook follows, from another thread."""
        threading.Thread(target=self.push, args=(branch, before, after), daemon=True).start()

    def hydrate(self, gitops: GitOpsRepo, version: str, message: str) -> str:
        """The hydrator: a dry change pushed and rendered, each moved branch announced."""
        branches = ["main", *(f"{b}-next" for b in ENVIRONMENTS)]
        before = {b: gitops.tip(b) for b in branches}
        change = gitops.change(version, message)
        for branch in branches:
            if gitops.tip(branch) != before[branch]:
                self.push(branch, before[branch], gitops.tip(branch))
        return change

    def person_merges(self, number: int) -> None:
        """A person presses "Merge" in Bitbucket; its webhooks follow (the push, from the
        fake, and the pull request's own event)."""
        merged = self.fake.person_merges(self.full_name, number)
        if self.product == "cloud":
            payload = _genuine("cloud", "pr_fulfilled.json")
            payload["pullrequest"].update(
                {k: merged[k] for k in ("id", "state", "source", "destination")}
            )
            event = "pullrequest:fulfilled"
        else:
            payload = _genuine("datacenter", "pr_merged.json")
            payload["pullRequest"].update(
                {k: merged[k] for k in ("id", "version", "state", "fromRef", "toRef")}
            )
            event = "pr:merged"
        if "repository" in payload:
            self._repository(payload)
        assert self.deliver(event, payload) == 202

    # --- statuses ----------------------------------------------------------------------

    def status(self, sha: str, key: str, phase: str = "success") -> None:
        """CI or CD reports a result: on Cloud, a build status on Bitbucket and its webhook;
        on Data Center, through the daemon's API (Data Center sends no build events)."""
        if self.product == "datacenter":
            answer = self.client.post(
                f"/api/v1/repositories/gitops/commits/{sha}/statuses",
                json={"key": key, "phase": phase},
            )
            assert answer.status_code == 201, answer.text
            self.status_posts += 1
            return
        state = {"success": "SUCCESSFUL", "failure": "FAILED", "pending": "INPROGRESS"}[phase]
        stored = requests.post(
            f"{self.fake.url}/2.0/repositories/{self.full_name}/commit/{sha}/statuses/build",
            json={"key": key, "state": state, "url": "https://ci.example.com/1"},
            auth=(USERNAME, PASSWORD),
            timeout=5,
        )
        assert stored.status_code == 201, stored.text
        payload = _genuine("cloud", "pipeline_hook_created.json")
        payload["commit_status"] = {**payload["commit_status"], **copy.deepcopy(stored.json())}
        self._repository(payload)
        assert self.deliver("repo:commit_status_created", payload) == 202
