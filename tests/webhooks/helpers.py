"""Test set-up for the webhook receivers: a config over the genuine payloads' repositories,
a tiny app built from ``build_routes``, and delivery helpers that sign like GitHub and GitLab.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # starlette 1.x would rather use httpx2, which is not installed; httpx still works.
    warnings.filterwarnings("ignore", "Using `httpx`", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from promoter.config import Config
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.fixture_paths import FIXTURES, GITHUB_WEBHOOKS
from webhooks import WebhookRoutes, build_routes
from webhooks.verify import GitHubSignature, SignedDelivery

GITHUB_FIXTURES = GITHUB_WEBHOOKS
GITLAB_FIXTURES = FIXTURES / "gitlab" / "webhooks"

GITHUB_SECRET = "gh-test-secret \u00e9"  # non-ASCII on purpose: the HMAC key is its UTF-8
GITHUB_OLD_SECRET = "gh-old-secret"
GITLAB_TOKEN = "gl-test-token"
GITLAB_SIGNING_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

HELLO_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # check runs, PR head (GitHub examples)
GL_MR_SHA = "c4c79227ed610f1151f05bbc5be33b4f340d39c8"  # drone-go-scm merge requests' head

SECRET_ENV = {
    "T_GH_SECRET": GITHUB_SECRET,
    "T_GH_OLD_SECRET": GITHUB_OLD_SECRET,
    "T_GL_TOKEN": GITLAB_TOKEN,
    "T_GL_SIGNING": GITLAB_SIGNING_SECRET,
    "T_SCM_TOKEN": "unused",
}

GITLAB_EVENT_OF_KIND = {
    "push": "Push Hook",
    "tag_push": "Tag Push Hook",
    "merge_request": "Merge Request Hook",
    "pipeline": "Pipeline Hook",
    "note": "Note Hook",
    "build": "Job Hook",
}


def _envs(*branches: str) -> list[dict[str, Any]]:
    return [{"branch": b} for b in branches]


def make_config(**webhooks: Any) -> Config:
    """Repositories named like the genuine payloads' (Codertocat/Hello-World, gitlab-org/...)."""
    token = {"fromEnv": "T_SCM_TOKEN"}
    hooks: dict[str, Any] = {
        "github": {"secrets": [{"fromEnv": "T_GH_SECRET"}, {"fromEnv": "T_GH_OLD_SECRET"}]},
        "gitlab": {
            "tokens": [{"fromEnv": "T_GL_TOKEN"}],
            "signingSecrets": [{"fromEnv": "T_GL_SIGNING"}],
        },
    }
    hooks.update(webhooks)
    return Config.model_validate(
        {
            "scmProviders": [
                {"name": "gh", "github": {"token": token}},
                {"name": "gl", "gitlab": {"token": token}},
                {"name": "gl-self", "gitlab": {"token": token, "pipelineGateKey": "ci"}},
            ],
            "repositories": [
                {
                    "name": "hello",
                    "url": "https://github.com/Codertocat/Hello-World.git",
                    "scmProvider": "gh",
                },
                {
                    "name": "hello-gl",
                    "url": "git@gitlab.com:gitlab-org/hello-world.git",
                    "scmProvider": "gl",
                },
                {
                    "name": "diaspora",
                    "url": "https://example.com/other/place.git",
                    "path": "mike/diaspora",
                    "scmProvider": "gl",
                },
                {
                    "name": "gitlab-test",
                    "url": "http://192.168.64.1/gitlab-org/gitlab-test.git",
                    "scmProvider": "gl-self",
                },
            ],
            "promotionStrategies": [
                {
                    "name": "hello-app",
                    "repository": "hello",
                    "dryBranch": "master",
                    "environments": _envs("environment/dev", "environment/prod"),
                },
                {
                    "name": "hello-infra",
                    "repository": "hello",
                    "dryBranch": "infra",
                    "environments": _envs("infra/dev"),
                },
                {
                    "name": "gl-app",
                    "repository": "hello-gl",
                    "dryBranch": "master",
                    "environments": _envs("environment/dev", "environment/prod"),
                },
                {
                    "name": "diaspora-app",
                    "repository": "diaspora",
                    "dryBranch": "master",
                    "environments": _envs("environment/dev"),
                },
                {
                    "name": "gitlab-test-app",
                    "repository": "gitlab-test",
                    "dryBranch": "main",
                    "environments": _envs("environment/dev"),
                },
            ],
            "webhooks": hooks,
        }
    )


@dataclass
class Recorder:
    """The enqueue callable: remembers every key it was given."""

    calls: list[frozenset[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: int = 0
    """The first calls that raise (after being recorded), like a queue that is shutting down."""

    def __call__(self, keys: Iterable[str]) -> None:
        with self.lock:
            self.calls.append(frozenset(keys))
            if len(self.calls) <= self.failures:
                raise RuntimeError("queue closed")

    @property
    def keys(self) -> set[str]:
        return set().union(*self.calls) if self.calls else set()


@dataclass
class Hooks:
    """A running receiver app and everything it writes to."""

    client: TestClient
    routes: WebhookRoutes
    enqueued: Recorder
    """Keys woken with a mirror refresh (a ref may have moved)."""
    cache: StatusCache
    shas: ShaIndex
    woken: Recorder
    """Keys woken for a new status of a commit they track (no ref moved)."""

    def github(
        self,
        event: str,
        body: bytes | dict[str, Any],
        *,
        secret: str | None = GITHUB_SECRET,
        delivery: str | None = None,
        headers: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent: dict[str, Any] = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "Content-Type": content_type,
        }
        if secret is not None:
            sent["X-Hub-Signature-256"] = GitHubSignature.sign(secret, raw)
        sent.update(headers or {})
        return self.client.post("/webhooks/github", content=raw, headers=sent)

    def gitlab(
        self,
        event: str,
        body: bytes | dict[str, Any],
        *,
        token: str | None = GITLAB_TOKEN,
        sign: bool = False,
        timestamp: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {"X-Gitlab-Event": event, "Content-Type": "application/json"}
        sent["X-Gitlab-Event-UUID"] = str(uuid.uuid4())
        if token is not None:
            sent["X-Gitlab-Token"] = token
        if sign:
            msg_id = str(uuid.uuid4())
            ts = int(time.time()) if timestamp is None else timestamp
            sent["webhook-id"] = sent["Idempotency-Key"] = msg_id
            sent["webhook-timestamp"] = str(ts)
            sent["webhook-signature"] = SignedDelivery.sign(GITLAB_SIGNING_SECRET, msg_id, ts, raw)
        sent.update(headers or {})
        return self.client.post("/webhooks/gitlab", content=raw, headers=sent)


@contextmanager
def running_hooks(
    state_dir: Path,
    config: Config | None = None,
    enqueued: Recorder | None = None,
    has_tip: Callable[[str, str, str], bool] | None = None,
) -> Iterator[Hooks]:
    """The receivers mounted in a tiny app, behind a TestClient."""
    enqueued = enqueued or Recorder()
    woken = Recorder()
    cache, shas = StatusCache(), ShaIndex()
    routes = build_routes(
        config=config or make_config(),
        enqueue=enqueued,
        wake=woken,
        status_cache=cache,
        sha_index=shas,
        state_dir=state_dir,
        has_tip=has_tip,
    )
    try:
        with TestClient(Starlette(routes=routes)) as client:
            yield Hooks(client, routes, enqueued, cache, shas, woken)
    finally:
        routes.close()


def genuine(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_bytes())
    assert isinstance(data, dict)
    return data


def github_fixture(relative: str) -> dict[str, Any]:
    return genuine(GITHUB_FIXTURES / relative)


def gitlab_fixture(relative: str) -> dict[str, Any]:
    return genuine(GITLAB_FIXTURES / relative)


def cached(hooks: Hooks, repo: str, sha: str) -> dict[str, str]:
    """Gate key → phase in the status cache, as the next reconcile would see it."""
    hooks.cache.store(repo, sha, [])  # a full read finding nothing keeps the webhook's entries
    return {s.key: s.phase.value for s in hooks.cache.get(repo, sha) or []}
