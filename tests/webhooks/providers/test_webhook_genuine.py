"""Every genuine GitHub and GitLab payload goes through the real app, signed, and answers right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promoter.metrics import sample
from tests.webhooks.helpers import (
    GITHUB_FIXTURES,
    GITLAB_EVENT_OF_KIND,
    GITLAB_FIXTURES,
    GL_MR_SHA,
    HELLO_SHA,
    Hooks,
    genuine,
)

ACCEPTED, IGNORED, PONG = (202, "accepted"), (202, "ignored"), (200, "pong")

# What each genuine GitHub example means for the test configuration (helpers.make_config):
# Codertocat/Hello-World is repository "hello", strategy "hello-app" has dry branch master,
# and "hello-app" tracks ec26c3e (the check runs' and pull request's head).
GITHUB = {
    "check_run/completed.1.payload.json": ACCEPTED,
    "check_run/completed.payload.json": ACCEPTED,
    "check_run/completed.with-organization.payload.json": ACCEPTED,
    "check_run/created.payload.json": ACCEPTED,
    "check_run/created.with-organization.payload.json": ACCEPTED,
    "check_suite/completed.1.payload.json": ACCEPTED,
    "check_suite/completed.payload.json": ACCEPTED,
    "check_suite/completed.with-organization.payload.json": ACCEPTED,
    "check_suite/requested.payload.json": IGNORED,
    "check_suite/requested.payload.with-email-with-special-characters.json": IGNORED,
    "check_suite/requested.with-organization.payload.json": IGNORED,
    "check_suite/rerequested.payload.json": IGNORED,
    "check_suite/rerequested.with-organization.payload.json": IGNORED,
    "create/payload.json": IGNORED,
    "create/with-description.payload.json": IGNORED,
    "create/with-installation.payload.json": IGNORED,
    "create/with-organization.payload.json": IGNORED,
    "delete/payload.json": IGNORED,
    "delete/with-installation.payload.json": IGNORED,
    "delete/with-organization.payload.json": IGNORED,
    "merge_group/checks_requested.payload.json": IGNORED,  # octo-org/octo-repo: not ours
    "ping/payload.json": PONG,
    "ping/with-app_id.payload.json": PONG,
    "ping/with-organization.payload.json": PONG,
    "pull_request/closed.payload.json": ACCEPTED,
    "pull_request/closed.with-organization.payload.json": ACCEPTED,
    "pull_request/opened.payload.json": ACCEPTED,
    "pull_request/opened.with-null-body.json": ACCEPTED,
    "pull_request/opened.with-organization.payload.json": ACCEPTED,
    "pull_request/reopened.payload.json": ACCEPTED,
    "pull_request/reopened.with-organization.payload.json": ACCEPTED,
    "pull_request/synchronize.payload.json": ACCEPTED,
    "pull_request_review/dismissed.payload.json": ACCEPTED,
    "pull_request_review/submitted.payload.json": ACCEPTED,
    "pull_request_review/submitted.with-organization.payload.json": ACCEPTED,
    "push/1.payload.json": IGNORED,  # tag deletion
    "push/payload.json": IGNORED,
    "push/with-installation.payload.json": IGNORED,
    "push/with-new-branch.payload.json": ACCEPTED,  # refs/heads/master: hello-app's dry branch
    "push/with-no-username-committer.payload.json": ACCEPTED,
    "push/with-organization.payload.json": IGNORED,
    "status/payload.json": ACCEPTED,
    "status/with-author-committer-null.payload.json": ACCEPTED,
    "status/with-installation.payload.json": ACCEPTED,
}

# gitlab-org/hello-world is "hello-gl" (strategy gl-app, dry master, tracks c4c7922);
# mike/diaspora is "diaspora"; gitlab-org/gitlab-test (192.168.64.1) is "gitlab-test".
GITLAB = {
    "drone-go-scm/branch_create.json": IGNORED,  # refs/heads/feature: not watched
    "drone-go-scm/branch_delete.json": IGNORED,
    "drone-go-scm/merge_request_comment_create.json": IGNORED,  # Note Hook
    "drone-go-scm/pipeline_hook.json": ACCEPTED,
    "drone-go-scm/pull_request_close.json": ACCEPTED,
    "drone-go-scm/pull_request_create.json": ACCEPTED,
    "drone-go-scm/pull_request_merge.json": ACCEPTED,
    "drone-go-scm/pull_request_reopen.json": ACCEPTED,
    "drone-go-scm/pull_request_review_ready.json": IGNORED,  # unknown repository
    "drone-go-scm/push.json": ACCEPTED,
    "drone-go-scm/push_merge.json": ACCEPTED,
    "drone-go-scm/tag_create.json": IGNORED,
    "drone-go-scm/tag_delete.json": IGNORED,
    "go-gitlab/build.json": IGNORED,
    "go-gitlab/job.json": IGNORED,
    "go-gitlab/merge_request.json": IGNORED,  # gitlabhq/gitlab-test: unknown repository
    "go-gitlab/note_merge_request.json": IGNORED,
    "go-gitlab/pipeline.json": ACCEPTED,
    "go-gitlab/push.json": ACCEPTED,
    "go-gitlab/tag_push.json": IGNORED,
}


def _relative(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.json"))


def test_every_genuine_github_payload_has_an_expectation() -> None:
    assert _relative(GITHUB_FIXTURES) == sorted(GITHUB)


def test_every_genuine_gitlab_payload_has_an_expectation() -> None:
    assert _relative(GITLAB_FIXTURES) == sorted(GITLAB)


@pytest.mark.parametrize("relative", sorted(GITHUB))
def test_a_genuine_github_delivery_answers_as_specified(hooks: Hooks, relative: str) -> None:
    hooks.shas.track("hello-app", [HELLO_SHA])
    event = relative.split("/")[0]
    expected_status, expected_result = GITHUB[relative]
    label = {"provider": "github", "event": event, "result": "accepted"}
    label["result"] = "accepted" if expected_result == "pong" else expected_result
    before = sample("promoter_webhook_requests_total", label)

    answer = hooks.github(event, (GITHUB_FIXTURES / relative).read_bytes())

    assert (answer.status_code, answer.json()["result"]) == (expected_status, expected_result)
    assert sample("promoter_webhook_requests_total", label) == before + 1
    if expected_result != "accepted":
        assert hooks.enqueued.calls == hooks.woken.calls == []
    elif event == "status":  # 6113728 is tracked by no strategy: all of hello's are woken
        assert hooks.enqueued.keys == {"hello-app", "hello-infra"}
    elif event in ("check_run", "check_suite"):  # on ec26c3e, a commit hello-app tracks
        assert (hooks.woken.keys, hooks.enqueued.keys) == ({"hello-app"}, set())
    else:  # master is hello-app's dry branch; a PR is on a branch hello-app watches
        assert hooks.enqueued.keys == {"hello-app"}


def test_a_merge_group_wakes_the_strategies_of_its_base_branch(hooks: Hooks) -> None:
    data = genuine(GITHUB_FIXTURES / "merge_group/checks_requested.payload.json")
    hello = genuine(GITHUB_FIXTURES / "push/with-new-branch.payload.json")["repository"]
    data["repository"] = hello  # the genuine group, in a repository of the configuration
    data["merge_group"]["base_ref"] = "refs/heads/environment/prod"
    answer = hooks.github("merge_group", json.dumps(data).encode())
    assert answer.json()["result"] == "accepted"
    assert hooks.enqueued.keys == {"hello-app"}
    data["action"] = "destroyed"
    assert hooks.github("merge_group", json.dumps(data).encode()).json()["result"] == "accepted"


@pytest.mark.parametrize("relative", sorted(GITLAB))
def test_a_genuine_gitlab_delivery_answers_as_specified(hooks: Hooks, relative: str) -> None:
    hooks.shas.track("gl-app", [GL_MR_SHA])
    data = genuine(GITLAB_FIXTURES / relative)
    event = GITLAB_EVENT_OF_KIND[data["object_kind"]]
    expected_status, expected_result = GITLAB[relative]

    answer = hooks.gitlab(event, (GITLAB_FIXTURES / relative).read_bytes())

    assert (answer.status_code, answer.json()["result"]) == (expected_status, expected_result)
    if expected_result != "accepted":
        assert hooks.enqueued.calls == []
    elif data["object_kind"] == "pipeline":
        assert hooks.enqueued.keys == {"gitlab-test-app"}
    elif "diaspora" in str(data.get("project", {}).get("path_with_namespace")):
        assert hooks.enqueued.keys == {"diaspora-app"}
    else:
        assert hooks.enqueued.keys == {"gl-app"}


@pytest.mark.parametrize("relative", sorted(GITLAB))
def test_a_genuine_gitlab_delivery_signed_the_new_way_answers_the_same(
    hooks: Hooks, relative: str
) -> None:
    data = genuine(GITLAB_FIXTURES / relative)
    event = GITLAB_EVENT_OF_KIND[data["object_kind"]]
    hooks.shas.track("gl-app", [GL_MR_SHA])

    answer = hooks.gitlab(event, (GITLAB_FIXTURES / relative).read_bytes(), token=None, sign=True)

    assert (answer.status_code, answer.json()["result"]) == GITLAB[relative]
