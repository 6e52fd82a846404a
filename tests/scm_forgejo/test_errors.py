"""Forgejo's HTTP errors reach the daemon, through the plugin process, as the promoter's errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.config import ExternalPlugin, Repository, ScmProvider, SecretRef
from promoter.errors import ScmAuthError, ScmNotFound, ScmRateLimited, ScmUnavailable
from scm_plugins.external import ExternalScm

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo

SHA = "b" * 40


@pytest.fixture
def host(
    forgejo: FakeForgejo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ExternalScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    plugin = ExternalPlugin(
        name="forgejo",
        directory=str(BIN),
        settings={"url": forgejo.url},
        secrets={"token": SecretRef(from_env=TOKEN_ENV)},
    )
    made = ExternalScm(provider=ScmProvider(name="fj", plugin=plugin), state_dir=str(tmp_path))
    yield made
    made.close()


@pytest.fixture
def repo(bare: Path) -> Repository:
    return Repository(name="gitops", url=str(bare), scm_provider="fj", path=FULL_NAME)


def test_a_429_becomes_rate_limited_with_forgejos_retry_after(
    host: ExternalScm, forgejo: FakeForgejo, repo: Repository
) -> None:
    forgejo.fault_headers = {"Retry-After": "12"}
    forgejo.fail_next("GET", r"/statuses$", 429)
    with pytest.raises(ScmRateLimited) as limited:
        host.get_commit_statuses(repo=repo, sha=SHA)
    assert limited.value.retry_after == 12


@pytest.mark.parametrize(
    ("status", "error"), [(502, ScmUnavailable), (401, ScmAuthError), (404, ScmNotFound)]
)
def test_forgejos_error_statuses_map_to_the_promoters_errors(
    host: ExternalScm, forgejo: FakeForgejo, repo: Repository, status: int, error: type[Exception]
) -> None:
    forgejo.fail_next("GET", r"/pulls$", status)
    with pytest.raises(error):
        host.find_open_pull_request(repo=repo, head="a", base="b")
    assert host.find_open_pull_request(repo=repo, head="a", base="b") is None  # once only


def test_the_git_environment_carries_the_token_as_a_header_never_in_a_url(
    host: ExternalScm, forgejo: FakeForgejo, repo: Repository
) -> None:
    env = host.git_environment(repo=repo)
    assert env["GIT_CONFIG_KEY_0"] == f"http.{forgejo.url}/.extraheader"
    assert env["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
    assert TOKEN not in env["GIT_CONFIG_KEY_0"]
