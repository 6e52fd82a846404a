"""Bitbucket Cloud and Data Center deliveries through the real receiver: signatures (with a
secret being rotated), de-duplication, and what the genuine payloads of
``tests/fixtures/bitbucket-*/webhooks`` mean.

Failure paths first: no signature, a wrong one, a receiver with no secret.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.errors import ConfigError
from promoter.models import Phase, PullRequestState
from promoter.state import ShaIndex, StatusCache
from tests.fixture_paths import FIXTURES
from webhooks import BitbucketCloud, BitbucketDataCenter, build_routes
from webhooks.events import Ignored, Ping, PullRequestChange, Push, PushBatch, StatusChange

SECRET_ENV, SECRET = "PROMOTER_TEST_BB_HOOK", "bitbucket-hook-secret"
OLD_ENV, OLD = "PROMOTER_TEST_BB_OLD_HOOK", "bitbucket-old-hook-secret"
CLOUD = FIXTURES / "bitbucket-cloud" / "webhooks"
DATACENTER = FIXTURES / "bitbucket-datacenter" / "webhooks"


def config_text(state: Path, *, secrets: bool = True) -> str:
    hooks = f"[{{fromEnv: {SECRET_ENV}}}, {{fromEnv: {OLD_ENV}}}]" if secrets else "[]"
    return f"""
scmProviders:
  - name: cloud
    bitbucketCloud: {{username: ada, password: {{fromEnv: {SECRET_ENV}}}}}
  - name: dc
    bitbucketDataCenter:
      url: "https://git.example.com/bitbucket"
      token: {{fromEnv: {SECRET_ENV}}}
repositories:
  - name: foo
    url: https://bitbucket.org/brydzewski/foo.git
    scmProvider: cloud
  - name: repo
    url: https://git.example.com/bitbucket/scm/prj/my-repo.git
    path: PRJ/my-repo
    scmProvider: dc
promotionStrategies:
  - name: foo
    repository: foo
    dryBranch: master
    environments: [{{branch: environment/dev}}]
  - name: repo
    repository: repo
    dryBranch: master
    environments: [{{branch: develop}}]
webhooks:
  bitbucketCloud: {{secrets: {hooks}}}
  bitbucketDataCenter: {{secrets: {hooks}}}
daemon: {{stateDir: {state}}}
"""


class App:
    def __init__(self, tmp_path: Path, *, secrets: bool = True) -> None:
        self.enqueued: list[str] = []
        self.cache = StatusCache()
        self.routes = build_routes(
            config=parse_config(config_text(tmp_path, secrets=secrets)),
            enqueue=self.enqueued.extend,
            status_cache=self.cache,
            sha_index=ShaIndex(),
            state_dir=tmp_path,
        )
        self.client = TestClient(Starlette(routes=self.routes))

    def deliver(
        self,
        product: str,
        event: str,
        raw: bytes,
        *,
        secret: str | None = SECRET,
        delivery: str = "d-1",
    ) -> Any:
        headers = {"X-Event-Key": event, "Content-Type": "application/json"}
        headers["X-Request-UUID" if product == "cloud" else "X-Request-Id"] = delivery
        if secret is not None:
            headers["X-Hub-Signature"] = BitbucketCloud.sign(secret, raw)
        return self.client.post(f"/webhooks/bitbucket-{product}", content=raw, headers=headers)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.setenv(OLD_ENV, OLD)
    made = App(tmp_path)
    yield made
    made.client.close()
    made.routes.close()


def raw(folder: Path, name: str) -> bytes:
    return (folder / name).read_bytes()


@pytest.mark.parametrize(
    ("product", "event", "folder"),
    [("cloud", "repo:push", CLOUD), ("datacenter", "repo:refs_changed", DATACENTER)],
)
def test_a_delivery_unsigned_or_signed_with_another_secret_is_refused(
    app: App, product: str, event: str, folder: Path
) -> None:
    body = raw(folder, "push.json")
    assert app.deliver(product, event, body, secret=None).status_code == 401
    assert app.deliver(product, event, body, secret="forged").status_code == 401
    tampered = body.replace(b"master", b"mistress")
    signed = BitbucketCloud.sign(SECRET, body)
    answer = app.client.post(
        f"/webhooks/bitbucket-{product}",
        content=tampered,
        headers={"X-Event-Key": event, "X-Hub-Signature": signed},
    )
    assert answer.status_code == 401
    assert app.enqueued == []


def test_a_receiver_with_no_secret_refuses_everything_and_says_so_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with caplog.at_level(logging.WARNING, logger="promoter.webhooks"):
        app = App(tmp_path, secrets=False)
    try:
        warned = {r.__dict__.get("provider") for r in caplog.records if "no secret" in r.message}
        assert {"bitbucket-cloud", "bitbucket-datacenter"} <= warned
        answer = app.deliver("cloud", "repo:push", raw(CLOUD, "push.json"), secret="")
        assert answer.status_code == 401
    finally:
        app.client.close()
        app.routes.close()


def test_an_empty_secret_is_refused_at_start() -> None:
    with pytest.raises(ConfigError):
        BitbucketDataCenter([" "])


@pytest.mark.parametrize("secret", [SECRET, OLD])
def test_either_secret_of_a_rotation_is_accepted_and_a_redelivery_is_a_duplicate(
    app: App, secret: str
) -> None:
    body = raw(CLOUD, "push.json")
    first = app.deliver("cloud", "repo:push", body, secret=secret, delivery="same")
    again = app.deliver("cloud", "repo:push", body, secret=secret, delivery="same")
    assert (first.status_code, first.json()["result"]) == (202, "accepted")
    assert (again.status_code, again.json()["result"]) == (202, "duplicate")
    assert app.enqueued == ["foo"]


def test_a_data_center_ping_is_answered_and_a_push_wakes_its_strategy(app: App) -> None:
    ping = app.deliver("datacenter", "diagnostics:ping", b'{"test": true}', delivery="p")
    assert (ping.status_code, ping.json()["result"]) == (200, "pong")
    body = json.loads(raw(DATACENTER, "push.json"))
    body["changes"][0].update(refId="refs/heads/develop")
    answer = app.deliver("datacenter", "repo:refs_changed", json.dumps(body).encode())
    assert answer.json()["result"] == "accepted"
    assert app.enqueued == ["repo"]


def test_a_cloud_build_status_reaches_the_status_cache(app: App) -> None:
    answer = app.deliver(
        "cloud", "repo:commit_status_created", raw(CLOUD, "pipeline_hook_created.json")
    )
    assert answer.status_code == 202, answer.text  # a repository the promoter does not serve
    assert answer.json()["result"] == "ignored"


# --- what the genuine payloads mean -----------------------------------------------------


def parse_cloud(event: str, name: str) -> Any:
    return BitbucketCloud([SECRET]).parse(event, {}, raw(CLOUD, name))


def parse_datacenter(event: str, name: str) -> Any:
    return BitbucketDataCenter([SECRET]).parse(event, {}, raw(DATACENTER, name))


def test_the_genuine_cloud_push_moves_master_with_a_commit_it_brought() -> None:
    push = parse_cloud("repo:push", "push.json")
    assert isinstance(push, Push)
    assert (push.ref, push.before, push.after, push.new_commit) == (
        "refs/heads/master",
        "40e7580cf11311d84a6e5e97e2cbba6df1675750",
        "141977fedf5cf35aa290ac87d4b5177ac4cd9de1",
        True,
    )
    assert push.repo.full_path == "brydzewski/foo"
    assert "https://bitbucket.org/brydzewski/foo" in push.repo.urls


def test_genuine_cloud_branch_and_tag_pushes() -> None:
    deleted = parse_cloud("repo:push", "push_branch_delete.json")
    assert isinstance(deleted, Push) and deleted.after is None
    created = parse_cloud("repo:push", "push_branch_create.json")
    assert isinstance(created, Push) and created.before is None and created.after
    assert isinstance(parse_cloud("repo:push", "push_tag_create.json"), Ignored)


@pytest.mark.parametrize(
    ("event", "name", "state"),
    [
        ("pullrequest:created", "pr_created.json", PullRequestState.OPEN),
        ("pullrequest:updated", "pr_updated.json", PullRequestState.OPEN),
        ("pullrequest:fulfilled", "pr_fulfilled.json", PullRequestState.MERGED),
        ("pullrequest:rejected", "pr_declined.json", PullRequestState.CLOSED),
    ],
)
def test_genuine_cloud_pull_request_events(event: str, name: str, state: PullRequestState) -> None:
    change = parse_cloud(event, name)
    assert isinstance(change, PullRequestChange)
    assert change.state is state and change.head_sha is None  # Cloud gives 12 characters
    assert change.head_branch and change.base_branch and change.number


def test_the_genuine_cloud_commit_status_events_are_statuses_of_their_commit() -> None:
    for event, name, phase in (
        ("repo:commit_status_created", "pipeline_hook_created.json", Phase.PENDING),
        ("repo:commit_status_updated", "pipeline_hook_update.json", Phase.SUCCESS),
    ):
        status = parse_cloud(event, name)
        assert isinstance(status, StatusChange)
        assert status.sha == "bdf6fac0519ffd1562461eb82e018ff62efffbc9"
        assert (status.key, status.phase) == ("3343801", phase)


def test_a_cloud_push_of_several_branches_is_one_push_per_branch() -> None:
    body = json.loads(raw(CLOUD, "push.json"))
    second = json.loads(json.dumps(body["push"]["changes"][0]))
    second["new"]["name"] = second["old"]["name"] = "environment/dev"
    body["push"]["changes"].append(second)
    batch = BitbucketCloud([SECRET]).parse("repo:push", {}, json.dumps(body).encode())
    assert isinstance(batch, PushBatch)
    assert [p.ref for p in batch.pushes] == ["refs/heads/master", "refs/heads/environment/dev"]


@pytest.mark.parametrize("name", ["push.json", "push_v5.json"])
def test_genuine_data_center_pushes(name: str) -> None:
    push = parse_datacenter("repo:refs_changed", name)
    assert isinstance(push, Push) and push.branch and push.after and not push.new_commit


def test_genuine_data_center_branch_and_tag_pushes() -> None:
    deleted = parse_datacenter("repo:refs_changed", "push_branch_delete.json")
    assert isinstance(deleted, Push) and deleted.after is None
    tag = parse_datacenter("repo:refs_changed", "push_tag_create.json")
    assert isinstance(tag, Push) and tag.branch is None


@pytest.mark.parametrize(
    ("event", "name", "state"),
    [
        ("pr:opened", "pr_open.json", PullRequestState.OPEN),
        ("pr:opened", "pr_open_iso_dates.json", PullRequestState.OPEN),
        ("pr:from_ref_updated", "pr_from_ref_updated.json", PullRequestState.OPEN),
        ("pr:modified", "pr_modified_meta.json", PullRequestState.OPEN),
        ("pr:modified", "pr_modified_toref.json", PullRequestState.OPEN),
        ("pr:merged", "pr_merged.json", PullRequestState.MERGED),
        ("pr:merged", "pr_merged_iso_dates.json", PullRequestState.MERGED),
        ("pr:declined", "pr_declined.json", PullRequestState.CLOSED),
        ("pr:declined", "pr_declined_iso_dates.json", PullRequestState.CLOSED),
        ("pr:deleted", "pr_deleted.json", PullRequestState.CLOSED),
    ],
)
def test_genuine_data_center_pull_request_events(
    event: str, name: str, state: PullRequestState
) -> None:
    change = parse_datacenter(event, name)
    assert isinstance(change, PullRequestChange)
    assert change.state is state and change.head_sha and change.repo.full_path == "PRJ/my-repo"


def test_events_the_promoter_has_no_use_for_are_ignored() -> None:
    assert isinstance(
        parse_cloud("pullrequest:comment_created", "pr_comment_created.json"), Ignored
    )
    assert isinstance(BitbucketDataCenter([SECRET]).parse("diagnostics:ping", {}, b"{}"), Ping)
