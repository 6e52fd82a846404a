"""The GitHub fake over real HTTP (what ``bench/webhook_storm.py`` runs the daemon against,
in another process): the plugin reaches it on 127.0.0.1 and sees GitHub's headers."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from promoter.config import GitHubProvider, Repository, ScmProvider, SecretRef
from scm_plugins.github import GitHubScm
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, TOKEN, TOKEN_ENV
from .fake_github import FakeGitHub
from .fake_server import FakeGitHubServer
from .genuine import Genuine
from .test_pulls import DEV, DEV_NEXT, open_dev


def test_the_plugin_reaches_the_fake_over_http_and_reads_unchanged_answers_for_free(
    genuine: Genuine,
    sandbox: GitSandbox,
    repo: Repository,
    make_plugin: Callable[[ScmProvider], GitHubScm],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGitHubServer(lambda url: FakeGitHub(genuine, base_url=url, tokens=(TOKEN,))) as server:
        server.fake.add_repository(FULL_NAME, sandbox.path)
        github = GitHubProvider(
            url=server.api_url, token=SecretRef(from_env=TOKEN_ENV), allow_insecure=True
        )
        plugin = make_plugin(ScmProvider(name="gh", github=github))
        opened = open_dev(plugin, repo)
        for _ in range(2):
            assert plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV) == opened
        lookups = [c.status for c in server.fake.calls if c.method == "GET" and "/pulls" in c.path]
        assert lookups == [200, 304]  # the ETag went out with the first answer
        refused = httpx.get(
            f"{server.api_url}/repos/{FULL_NAME}/pulls", headers={"Authorization": "token nope"}
        )
        assert refused.status_code == 401
        assert refused.json()["message"] == "Bad credentials"
        answered = httpx.get(
            f"{server.api_url}/repos/{FULL_NAME}/pulls", headers={"Authorization": f"token {TOKEN}"}
        )
        assert answered.status_code == 200 and "x-ratelimit-remaining" in answered.headers
