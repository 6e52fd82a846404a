"""GitHub's errors and rate limits mapped once to Scm* errors, counted and gauged."""

from __future__ import annotations

import re
import time
from email.utils import formatdate

import pytest
import requests
import responses
from github.Requester import Requester

from promoter.config import Repository
from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmError,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.metrics import sample
from scm_plugins.github import GitHubScm
from scm_plugins.github.errors import GitHubHTTPError, from_status, retry_after, translate

from .conftest import scm_calls
from .fake_github import FakeGitHub
from .fake_limits import FakeLimits
from .genuine import Genuine


def genuine_error(genuine: Genuine, name: str) -> GitHubHTTPError:
    status, headers, body = genuine.error(name)
    return GitHubHTTPError(status, body, headers)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (404, {"message": "Not Found"}, ScmNotFound),
        (410, {"message": "Gone"}, ScmNotFound),
        (405, {"message": "Pull Request is not mergeable"}, ScmConflict),
        (409, {"message": "Head branch was modified."}, ScmConflict),
        (422, {"message": "Validation Failed"}, ScmConflict),
        (500, {"message": "Internal"}, ScmUnavailable),
        (502, None, ScmUnavailable),
        (503, {"message": "Service unavailable"}, ScmUnavailable),
        (401, {"message": "Bad credentials"}, ScmAuthError),
        (403, {"message": "Resource not accessible by integration"}, ScmAuthError),
        (400, {"message": "Problems parsing JSON"}, ScmError),
    ],
)
def test_github_answers_map_to_one_scm_error_each(
    status: int, body: object, expected: type[ScmError]
) -> None:
    error = translate(GitHubHTTPError(status, body, {}))
    assert type(error) is expected
    assert str(status) in str(error)


def test_the_recorded_secondary_rate_limit_waits_for_retry_after(genuine: Genuine) -> None:
    error = translate(
        genuine_error(genuine, "SpecificExceptions.testAuthenticatedRateLimitExceeded")
    )
    assert isinstance(error, ScmRateLimited)
    assert error.retry_after == 60
    assert error.delay == 60


def test_the_recorded_primary_rate_limit_waits_until_the_reset(genuine: Genuine) -> None:
    recorded = genuine_error(genuine, "SpecificExceptions.testRateLimitExceeded")
    assert recorded.headers["x-ratelimit-remaining"] == "0"
    recorded.headers["x-ratelimit-reset"] = str(int(time.time()) + 120)
    error = translate(recorded)
    assert isinstance(error, ScmRateLimited)
    assert 110 <= error.retry_after <= 120


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "30"}, 30.0),
        ({"retry-after": formatdate(1_000_045, usegmt=True)}, 45.0),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000090"}, 90.0),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "999000"}, 1.0),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1507651200000"}, 3600.0),
        ({"x-ratelimit-remaining": "12", "x-ratelimit-reset": "1000090"}, None),
        ({}, None),
    ],
)
def test_retry_after_comes_from_retry_after_or_the_reset_of_an_exhausted_budget(
    headers: dict[str, str], wait: float | None
) -> None:
    assert retry_after(headers, now=1_000_000) == wait


def test_a_429_without_headers_waits_a_minute() -> None:
    error = translate(GitHubHTTPError(429, {"message": "Too Many Requests"}, {}))
    assert isinstance(error, ScmRateLimited)
    assert error.retry_after == 60


def test_pygithub_exceptions_translate_the_same_way(genuine: Genuine) -> None:
    status, headers, body = genuine.error("SpecificExceptions.testAuthenticatedRateLimitExceeded")
    limited = translate(Requester.createException(status, headers, body))
    assert isinstance(limited, ScmRateLimited)
    assert limited.retry_after == 60
    status, headers, body = genuine.error("Exceptions.testUnknownObject")
    assert isinstance(translate(Requester.createException(status, headers, body)), ScmNotFound)


def test_transport_errors_are_unavailable_and_unknown_ones_pass_through() -> None:
    assert isinstance(translate(requests.ConnectTimeout("x")), ScmUnavailable)
    assert isinstance(translate(requests.ConnectionError("x")), ScmUnavailable)
    assert translate(KeyError("x")) is None


def test_a_rate_limited_call_raises_with_the_original_as_cause_and_is_counted(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    fake.rate_limit_next("GET", r"/pulls$", retry_after=7)
    before = scm_calls(operation="find_pull_request", outcome="rate_limited")
    with pytest.raises(ScmRateLimited) as raised:
        plugin.find_open_pull_request(
            repo=repo, head="environment/dev-next", base="environment/dev"
        )
    assert raised.value.retry_after == 7
    assert isinstance(raised.value.__cause__, GitHubHTTPError)
    assert raised.value.__cause__.status == 403
    assert scm_calls(operation="find_pull_request", outcome="rate_limited") == before + 1


def test_an_exhausted_budget_is_a_rate_limit_too(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    fake.exhaust_rate_limit("GET", r"/pulls$", reset_in=30)
    with pytest.raises(ScmRateLimited) as raised:
        plugin.find_open_pull_request(
            repo=repo, head="environment/dev-next", base="environment/dev"
        )
    assert 20 <= raised.value.retry_after <= 30


def test_server_errors_and_timeouts_are_unavailable(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    fake.fail_next("PUT", r"/merge$", status=502, body={"message": "Server Error"})
    with pytest.raises(ScmUnavailable):
        plugin.merge_pull_request(repo=repo, number=1, expected_head_sha="a" * 40, message="m")
    with responses.RequestsMock() as timeouts:
        timeouts.add(
            responses.POST,
            re.compile(r"https://api\.github\.com(:443)?/graphql"),
            body=requests.ReadTimeout("read timed out"),
        )
        with pytest.raises(ScmUnavailable, match="did not answer in time"):
            plugin.get_commit_statuses(repo=repo, sha="b" * 40)


def test_the_rate_limit_gauge_follows_github_headers(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    fake.rate_limits.limits = FakeLimits(primary=4321)
    plugin.find_open_pull_request(repo=repo, head="environment/dev-next", base="environment/dev")
    assert sample("promoter_scm_rate_limit_remaining", {"provider": "github"}) == 4320
    fake.exhaust_rate_limit("GET", r"/pulls$")
    with pytest.raises(ScmRateLimited):
        plugin.find_open_pull_request(repo=repo, head="x", base="environment/dev")
    assert sample("promoter_scm_rate_limit_remaining", {"provider": "github"}) == 0


@pytest.mark.parametrize(
    ("status", "message", "lasting"),
    [
        (405, "Pull Request is not mergeable", True),
        (405, "At least 1 approving review is required by reviewers with write access.", True),
        (405, 'Required status check "ci" is expected.', True),
        (405, "Base branch was modified. Review and try the merge again.", False),
        (409, "Head branch was modified. Review and try the merge again.", False),
        (422, "Validation Failed", False),
    ],
)
def test_a_refused_merge_tells_a_lasting_refusal_from_a_temporary_one(
    status: int, message: str, lasting: bool
) -> None:
    error = from_status(status, message, {})
    assert isinstance(error, ScmConflict)
    assert error.lasting is lasting
