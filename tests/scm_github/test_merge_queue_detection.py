"""Whether a branch requires GitHub's merge queue, read from the rules that apply to it
(the plugin against the fake GitHub), and kept by the daemon's ``QueueDetection``: an
answer that cannot be had or read is "no queue", asked once, logged once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from promoter.config import Repository
from promoter.daemon import QueueDetection
from promoter.errors import ScmAuthError, ScmError, ScmNotFound, ScmUnavailable
from scm_plugins.github import GitHubScm

from .fake_github import FakeGitHub

DEV = "environment/dev"
RULES = r"/rules/branches/"


def rule_reads(fake: FakeGitHub, branch: str = DEV) -> int:
    return sum(1 for c in fake.calls if RULES in c.path and c.path.endswith(branch))


def test_a_branch_with_a_merge_queue_rule_requires_the_queue_and_one_without_does_not(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    fake.require_merge_queue("acme/deploy", DEV)
    assert plugin.merge_queue_required(repo=repo, branch=DEV)
    assert not plugin.merge_queue_required(repo=repo, branch="environment/staging")


def test_a_queue_required_by_a_classic_branch_protection_is_not_among_the_rules(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    fake.require_merge_queue("acme/deploy", DEV, ruleset=False)
    assert not plugin.merge_queue_required(repo=repo, branch=DEV)


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (404, None, ScmNotFound),
        (403, {"message": "Resource not accessible by integration"}, ScmAuthError),
        (502, None, ScmUnavailable),
        (200, "<html>a proxy's page</html>", ScmError),
        (200, {"message": "not a list of rules"}, ScmError),
    ],
)
def test_rules_that_cannot_be_had_or_read_are_an_error_of_the_plugin(
    plugin: GitHubScm,
    fake: FakeGitHub,
    repo: Repository,
    status: int,
    body: Any,
    error: type[ScmError],
) -> None:
    fake.fail_next("GET", RULES, status=status, body=body)
    with pytest.raises(error):
        plugin.merge_queue_required(repo=repo, branch=DEV)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, None),
        (403, {"message": "Resource not accessible by integration"}),
        (500, None),
        (200, "<html>a proxy's page</html>"),
    ],
)
def test_unreadable_rules_are_no_queue_asked_once_and_logged_once(
    plugin: GitHubScm,
    fake: FakeGitHub,
    repo: Repository,
    caplog: pytest.LogCaptureFixture,
    status: int,
    body: Any,
) -> None:
    fake.require_merge_queue("acme/deploy", DEV)
    fake.fail_next("GET", RULES, status=status, body=body, times=100)
    detection = QueueDetection()
    with caplog.at_level(logging.WARNING, logger="promoter.reader"):
        answers = [detection.required(plugin, repo, DEV) for _ in range(20)]
    assert answers == [False] * 20
    assert rule_reads(fake) == 1
    told = [r for r in caplog.records if r.getMessage().startswith("merge queue not detected")]
    assert len(told) == 1


def test_an_answer_is_kept_until_it_is_due_again_and_a_5xx_is_asked_again_sooner(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    now = [0.0]
    detection = QueueDetection(keep_for=3600.0, retry_for=300.0, clock=lambda: now[0])
    assert not detection.required(plugin, repo, DEV)
    fake.require_merge_queue("acme/deploy", DEV)
    now[0] = 3599.0
    assert not detection.required(plugin, repo, DEV)
    assert rule_reads(fake) == 1
    now[0] = 3600.0
    assert detection.required(plugin, repo, DEV)
    assert rule_reads(fake) == 2
    fake.fail_next("GET", RULES, status=503)
    now[0] = 7200.0
    assert not detection.required(plugin, repo, DEV)
    now[0] = 7500.0
    assert detection.required(plugin, repo, DEV)
    assert rule_reads(fake) == 4


def test_a_merge_refused_for_want_of_the_queue_teaches_the_detection(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    detection = QueueDetection()
    assert not detection.required(plugin, repo, DEV)
    detection.learn(plugin, repo, DEV)
    assert detection.required(plugin, repo, DEV)
    assert rule_reads(fake) == 1


def test_rules_that_stay_unreadable_are_logged_once_not_at_every_read_again(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    detection = QueueDetection(keep_for=3600.0, clock=lambda: now[0])
    fake.fail_next("GET", RULES, status=404, times=100)
    with caplog.at_level(logging.WARNING, logger="promoter.reader"):
        for hour in range(3):
            now[0] = hour * 3600.0
            assert not detection.required(plugin, repo, DEV)
    assert rule_reads(fake) == 3
    told = [r for r in caplog.records if r.getMessage().startswith("merge queue not detected")]
    assert len(told) == 1
