"""What the Azure DevOps plugin makes of a refused PAT, a hang, garbage, a 5xx and a 429.

Each failure enters where it would: at the HTTP boundary, from the fake Azure DevOps or
from a loopback server that misbehaves on purpose.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.errors import (
    ScmAuthError,
    ScmConflict,
    ScmNotFound,
    ScmRateLimited,
    ScmUnavailable,
)
from promoter.metrics import SCM_RATE_LIMIT_REMAINING
from scm_plugins.azure_devops import AzureDevOpsScm
from scm_plugins.azure_devops.errors import AzureHTTPError, from_error, retry_after

from .conftest import TOKEN, TOKEN_ENV, provider
from .fake_azure import FakeAzure

SHA = "0" * 39 + "1"


def build(url: str, tmp_path: Path, **settings: object) -> AzureDevOpsScm:
    return AzureDevOpsScm(provider=provider(url, **settings), state_dir=str(tmp_path))


@contextmanager
def misbehaving(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A loopback server answering every request with ``answer``; its organization URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

        def do_GET(self) -> None:
            answer(self)

        do_POST = do_PATCH = do_GET

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/fabrikam"
    finally:
        server.shutdown()
        server.server_close()


def repository(url: str) -> Repository:
    return Repository(name="gitops", url=f"{url}/Fabrikam/_git/gitops", scm_provider="azure")


def test_a_refused_pat_is_an_auth_error_that_never_shows_the_pat(
    azure: FakeAzure, repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "not-the-pat")
    plugin = build(azure.url, tmp_path)
    try:
        with pytest.raises(ScmAuthError) as caught:
            plugin.find_open_pull_request(repo=repo, head="a", base="b")
    finally:
        plugin.close()
    assert "not-the-pat" not in str(caught.value)
    assert [c.status for c in azure.calls] == [401]


def test_a_hanging_azure_devops_is_unavailable_after_the_call_s_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts, never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/fabrikam"
    plugin = build(url, tmp_path, timeout="0.3s")
    try:
        with pytest.raises(ScmUnavailable, match="did not answer in time"):
            plugin.get_commit_statuses(repo=repository(url), sha=SHA)
    finally:
        plugin.close()
        listener.close()


@pytest.mark.parametrize(
    ("status", "body", "kind", "error"),
    [
        (200, b"<html>not json</html>", "application/json", ScmUnavailable),
        (200, b"<html>sign in</html>", "text/html", ScmUnavailable),
        (203, b"<html>sign in</html>", "text/html", ScmAuthError),
        (302, b"", "text/html", ScmAuthError),
        (502, b"<html>bad gateway</html>", "text/html", ScmUnavailable),
        (503, b'{"message": "down"}', "application/json", ScmUnavailable),
    ],
)
def test_garbage_a_sign_in_page_and_a_5xx_become_scm_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    body: bytes,
    kind: str,
    error: type[Exception],
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        if status == 302:
            handler.send_header("Location", "https://login.example.invalid/_signin")
        handler.end_headers()
        handler.wfile.write(body)

    with misbehaving(answer) as url:
        plugin = build(url, tmp_path)
        try:
            with pytest.raises(error):
                plugin.get_commit_statuses(repo=repository(url), sha=SHA)
        finally:
            plugin.close()


def test_a_connection_reset_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)

    def reset(handler: BaseHTTPRequestHandler) -> None:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
        handler.connection.close()

    with misbehaving(reset) as url:
        plugin = build(url, tmp_path)
        try:
            with pytest.raises(ScmUnavailable):
                plugin.find_open_pull_request(repo=repository(url), head="a", base="b")
        finally:
            plugin.close()


def test_a_429_pauses_every_call_of_the_pat_for_its_retry_after_without_calling_azure(
    azure: FakeAzure, plugin: AzureDevOpsScm, repo: Repository
) -> None:
    azure.fail_next(
        "GET", r"/pullrequests$", 429, headers={"Retry-After": "30"}, type_key="RequestBlocked"
    )
    with pytest.raises(ScmRateLimited) as caught:
        plugin.find_open_pull_request(repo=repo, head="a", base="b")
    assert caught.value.retry_after == 30.0
    answered = len(azure.calls)
    with pytest.raises(ScmRateLimited):
        plugin.get_commit_statuses(repo=repo, sha=SHA)
    assert len(azure.calls) == answered  # the pause held the call back


def test_azure_s_tstu_throttling_is_a_rate_limit_until_its_reset(
    azure: FakeAzure, plugin: AzureDevOpsScm, repo: Repository
) -> None:
    azure.tstu(limit=2, window=120.0)
    assert plugin.find_open_pull_request(repo=repo, head="a", base="b") is None
    remaining = SCM_RATE_LIMIT_REMAINING.labels("azure-devops")._value.get()
    assert remaining == 1.0  # X-RateLimit-Remaining recorded
    plugin.find_open_pull_request(repo=repo, head="a", base="b")
    with pytest.raises(ScmRateLimited) as caught:
        plugin.find_open_pull_request(repo=repo, head="a", base="b")
    assert 100.0 <= caught.value.retry_after <= 120.0
    assert "Core:ATCPU" in str(caught.value)


def test_an_unknown_pull_request_is_not_found(plugin: AzureDevOpsScm, repo: Repository) -> None:
    with pytest.raises(ScmNotFound):
        plugin.update_pull_request(repo=repo, number=987654, title="x", body="", labels=())


def _refusal(status: int, message: str, type_key: str = "", **headers: str) -> Exception:
    data = {"$id": "1", "innerException": None, "message": message, "typeKey": type_key}
    return from_error(AzureHTTPError(status, data, headers, "PATCH /x"))


def test_azure_s_refusals_map_to_the_promoter_s_errors() -> None:
    stale = _refusal(
        400,
        "Invalid argument value. Parameter name: You must specify a valid "
        "LastMergeSourceCommit to perform this operation",
    )
    assert isinstance(stale, ScmConflict) and not stale.lasting
    policy = _refusal(
        403,
        "Pull request status rejected by status policy.",
        "GitPullRequestStatusRejectedByPolicyException",
    )
    assert isinstance(policy, ScmConflict) and policy.lasting
    exists = _refusal(409, "TF401179: An active pull request ... already exists.")
    assert isinstance(exists, ScmConflict) and not exists.lasting
    assert isinstance(
        _refusal(403, "TF401027: You need the Git 'GenericContribute' permission"), ScmAuthError
    )
    assert isinstance(_refusal(404, "TF401180: not found"), ScmNotFound)
    assert isinstance(_refusal(500, "boom"), ScmUnavailable)


def test_a_retry_after_as_a_date_or_a_reset_time_is_read() -> None:
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert retry_after({"X-RateLimit-Reset": "1000"}, now=990.0) == 10.0
    assert retry_after({}, now=0.0) == 60.0
    assert retry_after({"Retry-After": "0"}, now=0.0) == 1.0  # never a busy loop


def test_a_pull_request_answered_without_its_id_is_unavailable_not_a_crash(
    azure: FakeAzure, plugin: AzureDevOpsScm, repo: Repository
) -> None:
    azure.fail_next("POST", r"/pullrequests$", 201, message="not a pull request")
    with pytest.raises(ScmUnavailable, match="without its pullRequestId"):
        plugin.open_pull_request(repo=repo, head="a", base="b", title="t", body="", labels=())
