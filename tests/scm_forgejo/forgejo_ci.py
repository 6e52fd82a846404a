"""CI, CD, the hydrator and people as Forgejo sees them: each writes to the fake Forgejo, then
Forgejo's signed webhook reaches the daemon (push, status, pull_request).

The push and pull-request bodies are the genuine Gitea deliveries of tests/fixtures/forgejo
with their fields filled in; a status delivery is built from the field names of Gitea's
``CommitStatusPayload`` (no genuine one was found) and is not presented as genuine.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from starlette.testclient import TestClient

from tests.announced import Announcements
from tests.support import ENVIRONMENTS, GitOpsRepo
from webhooks.verify import ForgejoSignature

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FIXTURES, FakeForgejo

HOOK_ENV, HOOK_SECRET = "PROMOTER_TEST_FORGEJO_HOOK", "forgejo-hook-secret-0123"


def config_text(
    repo: Path, state: Path, url: str, *, poll_interval: str = "1h", prod_auto_merge: bool = True
) -> str:
    """The guestbook strategy on the fake Forgejo, woken by its webhooks (no ref polling)."""
    prod = "" if prod_auto_merge else ", autoMerge: false"
    return f"""
scmProviders:
  - name: forgejo
    plugin:
      name: forgejo
      directory: {BIN}
      settings: {{url: "{url}"}}
      secrets: {{token: {{fromEnv: {TOKEN_ENV}}}}}
      timeout: 10s
repositories:
  - name: gitops
    url: {repo}
    path: {FULL_NAME}
    scmProvider: forgejo
    pollInterval: {poll_interval}
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging}}
      - {{branch: environment/prod{prod}}}
webhooks:
  forgejo: {{secrets: [{{fromEnv: {HOOK_ENV}}}]}}
daemon:
  stateDir: {state}
  workers: 2
  maxBackoff: 1s
"""


def _genuine(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "webhooks" / name).read_text())
    return data


class ForgejoCI:
    def __init__(self, client: TestClient, fake: FakeForgejo) -> None:
        self.client, self.fake = client, fake
        fake.on_push = self.pushed_by_merge
        self.announced = Announcements(lambda: len(fake.calls))

    def push(self, branch: str, before: str | None, after: str) -> None:
        """Forgejo's ``push`` webhook for a push that brought ``after``."""
        payload = _genuine("gitea-push.json")
        commit = {**payload["commits"][0], "id": after}
        payload.update(
            ref=f"refs/heads/{branch}", before=before or "0" * 40, after=after, commits=[commit]
        )
        self.deliver("push", payload)
        self.announced.heard(after)

    def pushed_by_merge(self, full_name: str, branch: str, before: str, after: str) -> None:
        """A merge moved ``branch``: Forgejo's webhook follows, from another thread."""
        threading.Thread(target=self.push, args=(branch, before, after), daemon=True).start()

    def hydrate(
        self,
        gitops: GitOpsRepo,
        version: str,
        message: str,
        *,
        announcing: Callable[[str], None] | None = None,
    ) -> str:
        """The hydrator: a dry change pushed and rendered, each moved branch announced
        (``announcing(branch)`` is called before each webhook, once every branch moved)."""
        branches = ["main", *(f"{b}-next" for b in ENVIRONMENTS)]
        before = {b: gitops.tip(b) for b in branches}
        change = gitops.change(version, message)
        for branch in branches:
            if gitops.tip(branch) != before[branch]:
                if announcing is not None:
                    announcing(branch)
                self.push(branch, before[branch], gitops.tip(branch))
        return change

    def status(self, sha: str, context: str, state: str = "success") -> None:
        """CI or CD sets a commit status on Forgejo; Forgejo's ``status`` webhook follows."""
        answer = self._api("POST", f"/statuses/{sha}", {"state": state, "context": context})
        body = {  # Gitea's CommitStatusPayload field names, not a genuine delivery
            "id": answer["id"],
            "sha": sha,
            "context": context,
            "state": state,
            "description": "",
            "target_url": "",
            "created_at": answer["created_at"],
            "updated_at": answer["updated_at"],
            "repository": _genuine("gitea-push.json")["repository"],
        }
        self.deliver("status", body)

    def person_merges(self, number: int, head_sha: str) -> None:
        """A person presses "Merge" in Forgejo's UI; Forgejo's webhooks follow."""
        self._api("POST", f"/pulls/{number}/merge", {"Do": "merge", "head_commit_id": head_sha})
        payload = _genuine("forgejo-pull_request-opened.json")
        stored = next(p for p in self.fake.pulls_of(FULL_NAME) if p["number"] == number)
        payload["pull_request"].update(
            {k: stored[k] for k in ("number", "id", "head", "base", "merged", "state")}
        )
        payload.update(action="closed", number=number)
        self.deliver("pull_request", payload)

    def _api(self, method: str, path: str, body: dict[str, Any]) -> Any:
        answer = requests.request(
            method,
            f"{self.fake.url}/api/v1/repos/{FULL_NAME}{path}",
            headers={"Authorization": f"token {TOKEN}"},
            json=body,
            timeout=5,
        )
        assert answer.status_code < 300, answer.text
        return answer.json() if answer.content else None

    def deliver(self, event: str, payload: dict[str, Any]) -> None:
        repository = payload["repository"]
        repository.update(full_name=FULL_NAME, name=FULL_NAME.split("/")[1])
        for field in ("clone_url", "html_url", "ssh_url", "url"):
            repository.pop(field, None)
        raw = json.dumps(payload).encode()
        response = self.client.post(
            "/webhooks/forgejo",
            content=raw,
            headers={
                "X-Forgejo-Event": event,
                "X-Forgejo-Delivery": str(uuid.uuid4()),
                "X-Forgejo-Signature": ForgejoSignature.sign(HOOK_SECRET, raw),
                "Content-Type": "application/json",
            },
        )
        assert response.status_code == 202, response.text
