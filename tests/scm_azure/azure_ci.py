"""CI, CD, the hydrator and people as Azure DevOps sees them, around a daemon under test.

The daemon runs the built-in Azure DevOps plugin against the fake Azure DevOps, whose git
it clones and pushes to over HTTP with the PAT. Every service hook delivery the fake sends
(a push, a pull request created, updated, completed) reaches the daemon's
``POST /webhooks/azure-devops`` from another thread, with the hook's basic auth, as Azure
would send it. The hydrator pushes to the bare repository behind the fake and Azure's
``git.push`` follows (one delivery for all the refs it moved). CI and CD report through
the daemon's API (Azure has no event for a status posted there).
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.daemon import Runtime
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .fake_azure import FakeAzure
from .fake_state import FakeRepo
from .names import TOKEN_ENV

HOOK_ENV, HOOK_PASSWORD = "PROMOTER_TEST_AZURE_HOOK", "azure-hook-password-0123"
HOOK_USER = "azure-service-hook"
PERSON = {"uniqueName": "grace@fabrikam.example", "displayName": "Grace Hopper"}


def config_text(
    clone_url: str,
    state: Path,
    url: str,
    *,
    merge_strategy: str = "noFastForward",
    prod: str = "",
    staging: str = "",
    poll_interval: str = "1h",
) -> str:
    """The guestbook strategy on the fake Azure DevOps, woken by its service hooks."""
    return f"""
scmProviders:
  - name: azure
    azureDevOps:
      url: "{url}"
      token: {{fromEnv: {TOKEN_ENV}}}
      mergeStrategy: {merge_strategy}
      timeout: 10s
repositories:
  - name: gitops
    url: "{clone_url}"
    scmProvider: azure
    pollInterval: {poll_interval}
promotionStrategies:
  - name: guestbook
    repository: gitops
    labels: [promotion]
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging{staging}}}
      - {{branch: environment/prod{prod}}}
webhooks:
  azureDevOps: {{username: {HOOK_USER}, passwords: [{{fromEnv: {HOOK_ENV}}}]}}
daemon:
  stateDir: {state}
  workers: 2
  maxBackoff: 1s
  resyncInterval: 5m
"""


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class AzureCI:
    def __init__(
        self,
        client: TestClient,
        runtime: Runtime,
        fake: FakeAzure,
        repo: FakeRepo,
        gitops: GitOpsRepo,
    ) -> None:
        self.client, self.runtime, self.fake, self.repo, self.gitops = (
            client,
            runtime,
            fake,
            repo,
            gitops,
        )
        self.answers: list[tuple[str, int, tuple[str, ...]]] = []
        """Each delivery's event, the daemon's answer, and the refs a push moved."""
        self.held = False
        """While True, deliveries wait in ``withheld`` (Azure's are late)."""
        self.withheld: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        fake.on_event = self.sent

    def close(self) -> None:
        """Azure stops sending; the deliveries under way reach the daemon before it stops."""
        self.fake.on_event = None
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join(timeout=30)

    def sent(self, payload: dict[str, Any]) -> None:
        """Azure sends a delivery: it reaches the daemon from another thread."""
        thread = threading.Thread(target=self.deliver, args=(payload,), daemon=True)
        with self._lock:
            if self.held:
                self.withheld.append(payload)
                return
            self._threads.append(thread)
        thread.start()

    def release(self) -> None:
        with self._lock:
            self.held, late, self.withheld = False, self.withheld, []
        for payload in late:
            self.deliver(payload)

    def deliver(self, payload: dict[str, Any], *, password: str = HOOK_PASSWORD) -> int:
        response = self.client.post(
            "/webhooks/azure-devops",
            content=json.dumps(payload),
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Authorization": basic(HOOK_USER, password),
            },
        )
        refs = tuple(u["name"] for u in payload["resource"].get("refUpdates") or ())
        with self._lock:
            self.answers.append((payload["eventType"], response.status_code, refs))
        return response.status_code

    def hydrate(self, version: str, message: str) -> str:
        """The hydrator: a dry change pushed and rendered; Azure's ``git.push`` follows."""
        branches = ["main", *(f"{b}-next" for b in ENVIRONMENTS)]
        before = {b: self.gitops.tip(b) for b in branches}
        change = self.gitops.change(version, message)
        moved = [(b, before[b], self.gitops.tip(b)) for b in branches]
        self.fake.announce_push(self.repo, [m for m in moved if m[1] != m[2]])
        return change

    def status(self, sha: str, key: str, phase: str = "success") -> None:
        """CI or CD reports through the daemon's API (which writes it to Azure DevOps)."""
        answer = self.client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": key, "phase": phase},
        )
        assert answer.status_code == 201, answer.text

    def env(self, branch: str) -> dict[str, Any]:
        view = self.client.get("/api/v1/strategies/guestbook").json()
        found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
        return found

    def active_dry(self, branch: str) -> str | None:
        return (self.env(branch).get("active") or {}).get("drySha")

    def pulls(self, branch: str) -> list[dict[str, Any]]:
        ref = f"refs/heads/{branch}"
        return [p for p in self.fake.pulls(self.repo) if p["targetRefName"] == ref]

    def open_pull(self, branch: str) -> dict[str, Any]:
        return wait_for(
            lambda: next((p for p in self.pulls(branch) if p["status"] == "active"), None),
            what=f"an active pull request into {branch}",
        )

    def promote(self, branch: str, change: str) -> dict[str, Any]:
        """CI green on the pull request's head, then the environment's health once it runs
        ``change``; the pull request as Azure DevOps shows it at the end."""
        pr = self.open_pull(branch)
        self.status(pr["lastMergeSourceCommit"]["commitId"], "ci")
        wait_for(lambda: self.active_dry(branch) == change, what=f"{branch} at the change")
        self.status(self.gitops.tip(branch), "health")
        return next(p for p in self.pulls(branch) if p["pullRequestId"] == pr["pullRequestId"])

    def settle(self) -> None:
        wait_for(lambda: self.runtime.queue.idle(), what="an idle queue")
