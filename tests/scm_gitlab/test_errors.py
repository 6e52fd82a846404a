"""GitLab's errors and rate limits become the promoter's Scm* errors, each call counted."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import gitlab.utils
import pytest
import requests
import responses
from gitlab.exceptions import GitlabError, GitlabHttpError

from promoter.config import Repository, ScmProvider
from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.metrics import sample
from scm_plugins.gitlab import GitLabScm
from scm_plugins.gitlab.errors import retry_after, translate
from tests.scm_gitlab.conftest import scm_calls
from tests.scm_gitlab.fake_gitlab import FakeGitLab

HEAD, BASE = "environment/dev-next", "environment/dev"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (401, ScmAuthError),
        (403, ScmAuthError),
        (404, ScmNotFound),
        (405, ScmConflict),
        (406, ScmConflict),
        (409, ScmConflict),
        (422, ScmConflict),
        (429, ScmRateLimited),
        (500, ScmUnavailable),
        (502, ScmUnavailable),
        (503, ScmUnavailable),
    ],
)
def test_each_http_code_translates_to_one_error_class(code: int, expected: type[ScmError]) -> None:
    translated = translate(GitlabHttpError("nope", code))
    assert type(translated) is expected


def test_a_bad_request_is_an_scm_error_that_is_neither_conflict_nor_unavailable() -> None:
    translated = translate(GitlabHttpError("400 Bad request - title is missing", 400))
    assert type(translated) is ScmError


def test_unreachable_and_timed_out_gitlab_are_unavailable() -> None:
    assert isinstance(translate(requests.ConnectionError("refused")), ScmUnavailable)
    assert isinstance(translate(requests.Timeout("slow")), ScmUnavailable)


def test_exceptions_that_are_not_gitlabs_pass_through() -> None:
    assert translate(KeyError("x")) is None


def test_retry_after_reads_seconds_a_date_or_the_reset_time() -> None:
    assert retry_after({"Retry-After": "7"}) == 7
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480) == 10
    assert retry_after({"RateLimit-Reset": "1000030"}, now=1000000) == 30
    assert retry_after({}) == 60


def test_a_429_is_raised_at_once_with_retry_after_and_python_gitlab_does_not_retry_it(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.fail_next(
        "GET",
        r"/merge_requests$",
        429,
        headers={"Retry-After": "30"},
        body={"message": "Retry later"},
    )
    slept: list[float] = []
    sleeping = SimpleNamespace(sleep=slept.append, time=time.time, monotonic=time.monotonic)
    monkeypatch.setattr(gitlab.utils, "time", sleeping)  # where python-gitlab's retry sleeps
    with pytest.raises(ScmRateLimited) as raised:
        plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    assert slept == [], "python-gitlab must not sleep on 429"
    assert raised.value.retry_after == 30
    assert isinstance(raised.value.__cause__, GitlabError)
    assert len(fake.requests) == 1


def test_a_429_naming_only_the_reset_time_waits_until_then(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    reset = int(time.time()) + 45
    fake.fail_next("GET", r"/pipelines", 429, headers={"RateLimit-Reset": str(reset)})
    with pytest.raises(ScmRateLimited) as raised:
        plugin.get_commit_statuses(repo=repo, sha="a" * 40)
    assert 40 <= raised.value.retry_after <= 45


def test_a_server_error_is_unavailable_and_not_retried_by_the_client(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    fake.fail_next("GET", r"/merge_requests$", 502, times=5)
    with pytest.raises(ScmUnavailable):
        plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    assert len(fake.requests) == 1


def test_a_wrong_token_is_an_auth_error(
    monkeypatch: pytest.MonkeyPatch, fake: FakeGitLab, repo: Repository
) -> None:
    monkeypatch.setenv("WRONG_TOKEN", "glpat-wrong")
    provider = ScmProvider.model_validate(
        {"name": "gl", "gitlab": {"url": fake.url, "token": {"fromEnv": "WRONG_TOKEN"}}}
    )
    plugin = GitLabScm(provider=provider, state_dir="unused")
    with pytest.raises(ScmAuthError):
        plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    plugin.close()


def test_an_unknown_project_is_not_found(plugin: GitLabScm, fake: FakeGitLab) -> None:
    missing = Repository(name="x", url=f"{fake.url}/group/missing.git", scm_provider="gl")
    with pytest.raises(ScmNotFound):
        plugin.find_open_pull_request(repo=missing, head=HEAD, base=BASE)


def test_a_connection_error_is_unavailable(plugin: GitLabScm, repo: Repository) -> None:
    with responses.RequestsMock() as mock:
        mock.add(responses.GET, re.compile(".*"), body=requests.ConnectionError("refused"))
        with pytest.raises(ScmUnavailable, match="unreachable"):
            plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)


def test_every_call_is_counted_by_operation_and_outcome(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    found_before = scm_calls(operation="find_pull_request", outcome="success")
    limited_before = scm_calls(operation="find_pull_request", outcome="rate_limited")
    plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    fake.fail_next("GET", r"/merge_requests$", 429)
    with pytest.raises(ScmRateLimited):
        plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    assert scm_calls(operation="find_pull_request", outcome="success") == found_before + 1
    assert scm_calls(operation="find_pull_request", outcome="rate_limited") == limited_before + 1


def test_the_rate_limit_budget_gauge_follows_gitlabs_headers(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    remaining = sample("promoter_scm_rate_limit_remaining", {"provider": "gitlab"})
    assert remaining == fake.rate_limit_remaining
