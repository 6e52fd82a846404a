"""GitLab deliveries: token, signed deliveries, delivery ids, events to keys and cache entries."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from promoter.errors import ConfigError
from promoter.models import CommitStatus, Phase
from tests.webhooks.helpers import (
    GITLAB_SIGNING_SECRET,
    GITLAB_TOKEN,
    GL_MR_SHA,
    Hooks,
    gitlab_fixture,
    make_config,
    running_hooks,
)
from webhooks.verify import SignedDelivery

PIPELINE_SHA = "bcbb5ec396a2c0f828686f14fac9b80b780504f2"


def test_a_push_to_the_dry_branch_enqueues_its_strategy(hooks: Hooks) -> None:
    answer = hooks.gitlab("Push Hook", gitlab_fixture("drone-go-scm/push.json"))
    assert (answer.status_code, answer.json()) == (202, {"result": "accepted"})
    assert hooks.enqueued.calls == [frozenset({"gl-app"})]


def test_a_push_of_notes_enqueues_every_strategy_of_the_repository(hooks: Hooks) -> None:
    push = gitlab_fixture("go-gitlab/push.json") | {"ref": "refs/notes/hydrator.metadata"}
    assert hooks.gitlab("Push Hook", push).status_code == 202
    assert hooks.enqueued.keys == {"diaspora-app"}


def test_a_repository_is_found_by_its_project_id_when_path_and_urls_differ(tmp_path: Path) -> None:
    config = make_config()
    repos = [
        r.model_copy(update={"project_id": 4861503}) if r.name == "hello-gl" else r
        for r in config.repositories
    ]
    config = config.model_copy(update={"repositories": repos})
    push = gitlab_fixture("drone-go-scm/push.json")
    push["project"] = push["project"] | {
        "path_with_namespace": "renamed/elsewhere",
        "git_http_url": "https://gitlab.com/renamed/elsewhere.git",
        "git_ssh_url": "git@gitlab.com:renamed/elsewhere.git",
        "web_url": "https://gitlab.com/renamed/elsewhere",
        "http_url": "https://gitlab.com/renamed/elsewhere.git",
        "ssh_url": "git@gitlab.com:renamed/elsewhere.git",
        "url": "git@gitlab.com:renamed/elsewhere.git",
    }
    del push["repository"]

    with running_hooks(tmp_path, config) as hooks:
        assert hooks.gitlab("Push Hook", push).json() == {"result": "accepted"}
        assert hooks.enqueued.keys == {"gl-app"}


def test_a_pipeline_is_cached_under_the_repositorys_gate_key(hooks: Hooks) -> None:
    assert (
        hooks.gitlab("Pipeline Hook", gitlab_fixture("go-gitlab/pipeline.json")).status_code == 202
    )

    hooks.cache.store("gitlab-test", PIPELINE_SHA, [])
    statuses = {s.key: s for s in hooks.cache.get("gitlab-test", PIPELINE_SHA) or []}
    status = statuses["ci"]
    assert (status.key, status.phase, status.source) == ("ci", Phase.SUCCESS, "gitlab/pipeline")
    assert status.revision == 31  # the pipeline's id orders its reports
    assert hooks.enqueued.keys == {"gitlab-test-app"}


def test_each_job_of_a_pipeline_is_a_gate_under_its_name(hooks: Hooks) -> None:
    hooks.gitlab("Pipeline Hook", gitlab_fixture("go-gitlab/pipeline.json"))
    hooks.cache.store("gitlab-test", PIPELINE_SHA, [])
    jobs = {
        s.key: s.phase for s in hooks.cache.get("gitlab-test", PIPELINE_SHA) or [] if s.key != "ci"
    }
    assert jobs == {
        "production": Phase.SUCCESS,  # skipped counts as passed, like the pipeline
        "test-image": Phase.SUCCESS,
        "test-build": Phase.SUCCESS,
        "build-image": Phase.SUCCESS,
        "staging": Phase.PENDING,
    }


def test_statuses_set_through_the_api_arrive_as_an_external_pipeline(hooks: Hooks) -> None:
    hook = gitlab_fixture("go-gitlab/pipeline.json")
    hook["object_attributes"]["source"] = "external"
    hook["builds"] = [
        {**hook["builds"][0], "name": "argocd/health", "status": "failed", "stage": "external"},
        {**hook["builds"][0], "name": "lint", "status": "success", "stage": "external"},
    ]
    assert hooks.gitlab("Pipeline Hook", hook).json() == {"result": "accepted"}
    hooks.cache.store("gitlab-test", PIPELINE_SHA, [])
    found = {s.key: (s.phase, s.source) for s in hooks.cache.get("gitlab-test", PIPELINE_SHA) or []}
    assert found == {
        "argocd/health": (Phase.FAILURE, "gitlab/status"),
        "lint": (Phase.SUCCESS, "gitlab/status"),
    }  # no pipeline gate: an external pipeline is not "the pipeline" of the commit


def test_a_pipeline_back_to_running_is_not_hidden_by_an_older_success(hooks: Hooks) -> None:
    hook = gitlab_fixture("go-gitlab/pipeline.json")
    hooks.gitlab("Pipeline Hook", hook)
    # A REST read since then saw it succeed, with a millisecond timestamp far "newer"
    # than the hook's second-precision (and, while running, creation) time.
    read = CommitStatus(
        key="ci",
        phase=Phase.SUCCESS,
        updated_at=datetime(2030, 1, 1, tzinfo=UTC),
        revision=31,
    )
    hooks.cache.store("gitlab-test", PIPELINE_SHA, [read])
    again = json.loads(json.dumps(hook))
    again["object_attributes"].update(status="running", finished_at=None)
    hooks.gitlab("Pipeline Hook", again)
    statuses = {s.key: s for s in hooks.cache.get("gitlab-test", PIPELINE_SHA) or []}
    assert statuses["ci"].phase is Phase.PENDING


@pytest.mark.parametrize(
    ("status", "phase"),
    [
        ("success", "success"),
        ("skipped", "success"),
        ("manual", "pending"),
        ("created", "pending"),
        ("waiting_for_resource", "pending"),
        ("preparing", "pending"),
        ("pending", "pending"),
        ("running", "pending"),
        ("scheduled", "pending"),
        ("failed", "failure"),
        ("canceled", "failure"),
    ],
)
def test_pipeline_statuses_map_to_phases(hooks: Hooks, status: str, phase: str) -> None:
    pipeline = gitlab_fixture("drone-go-scm/pipeline_hook.json")
    pipeline["object_attributes"]["status"] = status

    hooks.gitlab("Pipeline Hook", pipeline)

    hooks.cache.store("gitlab-test", PIPELINE_SHA, [])
    cached = hooks.cache.get("gitlab-test", PIPELINE_SHA) or []
    assert [s.phase.value for s in cached if s.key == "ci"] == [phase]


@pytest.mark.parametrize("source", ["external", "parent_pipeline"])
def test_external_and_child_pipelines_never_set_the_pipeline_gate(
    hooks: Hooks, source: str
) -> None:
    pipeline = gitlab_fixture("drone-go-scm/pipeline_hook.json")
    pipeline["object_attributes"]["source"] = source

    hooks.gitlab("Pipeline Hook", pipeline)

    hooks.cache.store("gitlab-test", PIPELINE_SHA, [])
    cached = hooks.cache.get("gitlab-test", PIPELINE_SHA) or []
    assert "ci" not in {s.key for s in cached}
    if source == "parent_pipeline":  # summed up in its parent: nothing from it
        assert cached == []


def test_a_pipeline_of_a_gitlab_com_project_uses_the_default_gate_key(hooks: Hooks) -> None:
    pipeline = gitlab_fixture("drone-go-scm/pipeline_hook.json")
    pipeline["project"] = gitlab_fixture("drone-go-scm/push.json")["project"]

    hooks.gitlab("Pipeline Hook", pipeline)

    hooks.cache.store("hello-gl", PIPELINE_SHA, [])
    cached = hooks.cache.get("hello-gl", PIPELINE_SHA) or []
    assert [s.key for s in cached if s.source == "gitlab/pipeline"] == ["pipeline"]
    assert hooks.enqueued.keys == {"gl-app"}


@pytest.mark.parametrize("action", ["open", "update", "merge", "close", "reopen"])
def test_a_promotion_merge_request_enqueues_its_strategy(hooks: Hooks, action: str) -> None:
    mr = gitlab_fixture("drone-go-scm/pull_request_merge.json")
    attrs = mr["object_attributes"]
    attrs["action"] = action
    attrs["source_branch"], attrs["target_branch"] = "environment/dev-next", "environment/dev"

    assert hooks.gitlab("Merge Request Hook", mr).json() == {"result": "accepted"}
    assert hooks.enqueued.keys == {"gl-app"}


def test_a_merge_request_whose_head_a_strategy_tracks_enqueues_it(hooks: Hooks) -> None:
    hooks.shas.track("gl-app", [GL_MR_SHA])
    mr = gitlab_fixture("drone-go-scm/pull_request_merge.json")
    assert hooks.gitlab("Merge Request Hook", mr).json() == {"result": "accepted"}
    assert hooks.enqueued.keys == {"gl-app"}


def test_a_merge_request_unrelated_to_promotion_is_ignored(hooks: Hooks) -> None:
    mr = gitlab_fixture("drone-go-scm/pull_request_create.json")
    assert hooks.gitlab("Merge Request Hook", mr).json()["result"] == "ignored"
    assert hooks.enqueued.calls == []


@pytest.mark.parametrize("token", [None, "", "wrong", GITLAB_TOKEN + " ", GITLAB_TOKEN.upper()])
def test_a_missing_or_wrong_token_is_401_without_detail(hooks: Hooks, token: str | None) -> None:
    answer = hooks.gitlab("Push Hook", gitlab_fixture("drone-go-scm/push.json"), token=token)
    assert (answer.status_code, answer.json()) == (401, {"result": "unauthorized"})
    assert hooks.enqueued.calls == []


def test_a_signed_delivery_is_accepted_without_a_token(hooks: Hooks) -> None:
    answer = hooks.gitlab(
        "Push Hook", gitlab_fixture("drone-go-scm/push.json"), token=None, sign=True
    )
    assert answer.status_code == 202


@pytest.mark.parametrize("age", [301, -360, 86400])
def test_a_signed_delivery_outside_five_minutes_is_refused_even_with_a_token(
    hooks: Hooks, age: int
) -> None:
    """Past the bound by a second, or ahead of it by a minute: a timestamp ahead of the
    clock comes closer while the request is on its way (the exact bound is checked below,
    on a clock that stands still)."""
    push = gitlab_fixture("drone-go-scm/push.json")
    answer = hooks.gitlab("Push Hook", push, sign=True, timestamp=int(time.time()) - age)
    assert answer.status_code == 401


@pytest.mark.parametrize(
    ("age", "verified"), [(300, True), (-300, True), (301, False), (-301, False)]
)
def test_a_signature_is_good_for_five_minutes_either_way_and_not_a_second_more(
    age: int, verified: bool
) -> None:
    now = 1_700_000_000
    verifier = SignedDelivery([GITLAB_SIGNING_SECRET], clock=lambda: now)
    signature = SignedDelivery.sign(GITLAB_SIGNING_SECRET, "id-1", now - age, b"{}")
    assert verifier.verify("id-1", str(now - age), signature, b"{}") is verified


def test_a_signed_delivery_with_a_tampered_body_is_refused(hooks: Hooks) -> None:
    msg_id, ts = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", int(time.time())
    signature = SignedDelivery.sign(GITLAB_SIGNING_SECRET, msg_id, ts, b'{"a": 1}')
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    answer = hooks.gitlab("Push Hook", b'{"a": 2}', token=None, headers=headers)
    assert answer.status_code == 401


def test_any_v1_signature_among_several_verifies() -> None:
    now = 1_700_000_000
    verifier = SignedDelivery([GITLAB_SIGNING_SECRET], clock=lambda: now)
    good = SignedDelivery.sign(GITLAB_SIGNING_SECRET, "id-1", now, b"{}")
    other = SignedDelivery.sign("whsec_" + "A" * 32, "id-1", now, b"{}")

    assert verifier.verify("id-1", str(now), f"{other} v2,xyz {good}", b"{}")
    assert not verifier.verify("id-1", str(now), f"{other} {good.replace('v1,', 'v2,')}", b"{}")
    assert not verifier.verify("id-2", str(now), good, b"{}")
    assert not verifier.verify("id-1", "not-a-number", good, b"{}")


def test_a_rotated_signing_secret_verifies_alongside_the_new_one() -> None:
    now, old = 1_700_000_000, "whsec_" + "B" * 32
    verifier = SignedDelivery([GITLAB_SIGNING_SECRET, old], clock=lambda: now)
    assert verifier.verify("i", str(now), SignedDelivery.sign(old, "i", now, b"x"), b"x")
    assert verifier.verify(
        "i", str(now), SignedDelivery.sign(GITLAB_SIGNING_SECRET, "i", now, b"x"), b"x"
    )


def test_a_malformed_signing_secret_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError):
        SignedDelivery(["whsec_not base64!"])


def test_a_retry_with_the_same_idempotency_key_is_a_duplicate(hooks: Hooks) -> None:
    push = gitlab_fixture("drone-go-scm/push.json")
    headers = {"Idempotency-Key": "4f0b6e2c-6a39-4b8c-9a8e-0d5c3f7b1e11"}

    first = hooks.gitlab("Push Hook", push, headers=headers)
    again = hooks.gitlab("Push Hook", push, headers=headers)

    assert [first.json()["result"], again.json()["result"]] == ["accepted", "duplicate"]
    assert again.status_code == 202
    assert len(hooks.enqueued.calls) == 1


def test_the_same_event_uuid_with_the_same_body_is_a_duplicate(hooks: Hooks) -> None:
    push = gitlab_fixture("drone-go-scm/push.json")
    headers = {"X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e"}
    results = [hooks.gitlab("Push Hook", push, headers=headers).json()["result"] for _ in range(2)]
    assert results == ["accepted", "duplicate"]


def test_a_recursive_event_sharing_an_event_uuid_is_still_processed(hooks: Hooks) -> None:
    headers = {"X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e"}
    first = gitlab_fixture("drone-go-scm/push.json")
    second = first | {"ref": "refs/heads/environment/dev-next"}

    assert hooks.gitlab("Push Hook", first, headers=headers).json()["result"] == "accepted"
    assert hooks.gitlab("Push Hook", second, headers=headers).json()["result"] == "accepted"


def test_a_signed_retry_with_the_same_webhook_id_is_a_duplicate(hooks: Hooks) -> None:
    push, ts = gitlab_fixture("drone-go-scm/push.json"), int(time.time())
    raw = json.dumps(push).encode()
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(ts),
        "webhook-signature": SignedDelivery.sign(GITLAB_SIGNING_SECRET, "msg_1", ts, raw),
    }
    results = [hooks.gitlab("Push Hook", raw, token=None, headers=headers).json() for _ in range(2)]
    assert [r["result"] for r in results] == ["accepted", "duplicate"]


@pytest.mark.parametrize(
    "event", ["Tag Push Hook", "Note Hook", "Job Hook", "Issue Hook", "Made Up Hook"]
)
def test_other_events_are_ignored(hooks: Hooks, event: str) -> None:
    answer = hooks.gitlab(event, gitlab_fixture("drone-go-scm/push.json"))
    assert (answer.status_code, answer.json()["result"]) == (202, "ignored")
    assert hooks.enqueued.calls == []


def test_a_system_hook_is_read_by_its_object_kind(hooks: Hooks) -> None:
    answer = hooks.gitlab("System Hook", gitlab_fixture("drone-go-scm/push.json"))
    assert answer.json()["result"] == "accepted"


@pytest.mark.parametrize("body", [b"", b"{", b"null", b'"push"', b'{"object_kind": "push"}'])
def test_a_malformed_body_is_400(hooks: Hooks, body: bytes) -> None:
    answer = hooks.gitlab("Push Hook", body)
    assert (answer.status_code, answer.json()["result"]) == (400, "invalid")
