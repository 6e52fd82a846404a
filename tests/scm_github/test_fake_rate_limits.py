"""The fake GitHub enforces GitHub's primary and secondary limits per token, as GitHub answers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests

from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, TOKEN
from .fake_github import FakeGitHub
from .fake_limits import FakeLimits, RateLimits
from .genuine import Genuine


@pytest.fixture
def sha(sandbox: GitSandbox) -> str:
    return sandbox.branch_sha("environment/dev") or ""


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def limited(fake: FakeGitHub, genuine: Genuine, **limits: Any) -> Clock:
    clock = Clock()
    fake.rate_limits = RateLimits(FakeLimits(**limits), genuine, clock=clock)
    return clock


def send(fake: FakeGitHub, method: str, path: str, **kwargs: Any) -> requests.Response:
    return requests.request(
        method,
        f"{fake.base_url}/repos/{FULL_NAME}{path}",
        headers={"Authorization": f"token {TOKEN}", **kwargs.pop("headers", {})},
        timeout=5,
        **kwargs,
    )


def test_the_primary_limit_counts_down_refuses_with_github_headers_and_resets(
    fake: FakeGitHub, genuine: Genuine, sha: str
) -> None:
    clock = limited(fake, genuine, primary=3)
    first = send(fake, "GET", f"/commits/{sha}/status")
    etag = first.headers["etag"]
    assert first.headers["x-ratelimit-remaining"] == "2"
    assert first.headers["x-ratelimit-reset"] == str(1_700_000_000 + 3600)
    again = send(fake, "GET", f"/commits/{sha}/status", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["x-ratelimit-remaining"] == "2"  # a 304 is free
    send(fake, "GET", "/pulls")
    send(fake, "GET", "/pulls")
    refused = send(fake, "GET", "/pulls")
    assert refused.status_code == 403
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.json()["message"].startswith("API Rate Limit Exceeded")
    assert [h.limit for h in fake.rate_limits.hits] == ["primary"]
    clock.now += 3600
    renewed = send(fake, "GET", "/pulls")
    assert renewed.status_code == 200
    assert renewed.headers["x-ratelimit-remaining"] == "2"
    assert renewed.headers["x-ratelimit-reset"] == str(1_700_000_000 + 7200)


def test_points_per_minute_weigh_writes_five_times_reads(
    fake: FakeGitHub, genuine: Genuine, sha: str
) -> None:
    clock = limited(fake, genuine, points_per_minute=11)
    for _ in range(2):
        status = {"state": "success", "context": "ci"}
        assert send(fake, "POST", f"/statuses/{sha}", json=status).status_code == 201
    assert send(fake, "GET", "/pulls").status_code == 200
    refused = send(fake, "GET", "/pulls")
    assert refused.status_code == 403
    assert refused.headers["retry-after"] == "60"
    assert refused.json() == genuine.quoted("secondary-rate-limit")
    assert "x-ratelimit-remaining" in refused.headers
    clock.now += 60
    assert send(fake, "GET", "/pulls").status_code == 200
    assert [h.limit for h in fake.rate_limits.hits] == ["points"]


def test_content_creation_is_limited_per_minute_and_per_hour_but_statuses_are_not(
    fake: FakeGitHub, genuine: Genuine, sha: str
) -> None:
    clock = limited(fake, genuine, content_per_minute=2, content_per_hour=3)
    for _ in range(2):
        assert send(fake, "POST", "/issues/1/comments", json={"body": "hi"}).status_code != 403
    assert send(fake, "POST", f"/statuses/{sha}", json={"state": "success", "context": "ci"}).ok
    refused = send(fake, "POST", "/issues/1/comments", json={"body": "hi"})
    assert refused.status_code == 403
    assert refused.json() == genuine.quoted("secondary-rate-limit.content-creation")
    clock.now += 60
    assert send(fake, "POST", "/issues/1/comments", json={"body": "hi"}).status_code != 403
    clock.now += 60
    assert send(fake, "POST", "/issues/1/comments", json={"body": "hi"}).status_code == 403
    clock.now += 3600
    assert send(fake, "POST", "/issues/1/comments", json={"body": "hi"}).status_code != 403
    assert [h.limit for h in fake.rate_limits.hits] == ["content", "content"]


def test_more_concurrent_requests_than_allowed_are_refused(
    fake: FakeGitHub, genuine: Genuine
) -> None:
    limited(fake, genuine, concurrent=1)
    inside, release = threading.Event(), threading.Event()

    def slow(method: str, path: str) -> None:
        if not inside.is_set():
            inside.set()
            release.wait(5)

    fake.on_request = slow
    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(send(fake, "GET", "/pulls").status_code))
    first.start()
    assert inside.wait(30)
    second = send(fake, "GET", "/pulls")
    release.set()
    first.join()
    assert second.status_code == 403 and answers == [200]
    assert [h.limit for h in fake.rate_limits.hits] == ["concurrency"]


def test_a_scaled_hour_scales_every_window(fake: FakeGitHub, genuine: Genuine) -> None:
    clock = limited(fake, genuine)
    fake.rate_limits.limits = FakeLimits(points_per_minute=1).scaled(hour=60.0)
    assert send(fake, "GET", "/pulls").status_code == 200
    refused = send(fake, "GET", "/pulls")
    assert refused.status_code == 403 and refused.headers["retry-after"] == "1"
    clock.now += 1.0
    ok = send(fake, "GET", "/pulls")
    assert ok.status_code == 200
    assert ok.headers["x-ratelimit-reset"] == str(1_700_000_000 + 60)
