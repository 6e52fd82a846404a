"""The plugin as the registry builds it: projects, instances, CA bundles, git credentials."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import responses

from promoter.config import Repository, ScmProvider
from scm_plugins.gitlab import GitLabScm
from scm_plugins.protocol import ScmPlugin
from scm_plugins.registry import build_plugin
from tests.scm_gitlab.conftest import PROJECT, TOKEN, TOKEN_ENV, head
from tests.scm_gitlab.fake_gitlab import FakeGitLab

HEAD, BASE = "environment/dev-next", "environment/dev"


def gitlab_provider(url: str, **extra: object) -> ScmProvider:
    return ScmProvider.model_validate(
        {"name": "gl", "gitlab": {"url": url, "token": {"fromEnv": TOKEN_ENV}, **extra}}
    )


def test_the_registry_builds_a_gitlab_plugin_that_satisfies_the_protocol(
    provider: ScmProvider, tmp_path: Path
) -> None:
    plugin = build_plugin(provider, state_dir=str(tmp_path))
    assert isinstance(plugin, GitLabScm)
    assert isinstance(plugin, ScmPlugin)
    assert plugin.name == "gitlab"
    plugin.close()


def test_a_project_is_addressed_by_numeric_id_when_given(
    plugin: GitLabScm, fake: FakeGitLab
) -> None:
    by_id = Repository(name="app", url="unused", project_id=4242, scm_provider="gl")
    assert plugin.find_open_pull_request(repo=by_id, head=HEAD, base=BASE) is None
    assert fake.requests[-1][1].startswith("/projects/4242/merge_requests?")


def test_a_project_is_addressed_by_its_url_encoded_path_otherwise(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    assert fake.requests[-1][1].startswith("/projects/group%2Fsub%2Fapp/merge_requests?")


def test_a_self_managed_instance_under_a_relative_url_root_finds_the_project(
    genuine_fixtures: Path, bare_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    fake = FakeGitLab(fixtures=genuine_fixtures, url="https://git.corp.example/gitlab", token=TOKEN)
    fake.add_project(PROJECT, git_dir=bare_repo)
    repo = Repository(name="app", url=f"{fake.url}/{PROJECT}.git", scm_provider="gl")
    with fake:
        plugin = GitLabScm(provider=gitlab_provider(fake.url), state_dir=str(tmp_path))
        pr = plugin.open_pull_request(
            repo=repo, head=HEAD, base=BASE, title="t", body="", labels=()
        )
        plugin.close()
    assert pr.head_sha == head(bare_repo, HEAD)


def test_a_custom_ca_bundle_is_used_to_verify_the_instance(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    provider = gitlab_provider("https://git.corp.example", caBundle=str(bundle))
    plugin = GitLabScm(provider=provider, state_dir=str(tmp_path))
    repo = Repository(name="app", url="https://git.corp.example/g/app.git", scm_provider="gl")
    with responses.RequestsMock() as mock:
        mock.add(responses.GET, re.compile(".*"), json=[])
        plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
        sent = mock.calls[0].request
        assert getattr(sent, "req_kwargs", {})["verify"] == str(bundle)  # recorded by responses
    env = plugin.git_environment(repo=repo)
    assert env["GIT_CONFIG_KEY_1"] == "http.https://git.corp.example/.sslCAInfo"
    assert env["GIT_CONFIG_VALUE_1"] == str(bundle)
    plugin.close()


def test_git_gets_the_token_as_an_auth_header_for_the_origin_only(
    plugin: GitLabScm, repo: Repository
) -> None:
    env = plugin.git_environment(repo=repo)
    basic = base64.b64encode(f"oauth2:{TOKEN}".encode()).decode()
    assert env == {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.https://gitlab.example.com/.extraheader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def test_a_clone_url_with_user_info_or_ssh_still_gets_a_clean_origin(plugin: GitLabScm) -> None:
    with_user = Repository(
        name="a", url="https://someone@gitlab.example.com:8443/g/app.git", scm_provider="gl"
    )
    ssh = Repository(name="b", url="git@gitlab.example.com:g/app.git", scm_provider="gl")
    assert (
        plugin.git_environment(repo=with_user)["GIT_CONFIG_KEY_0"]
        == "http.https://gitlab.example.com:8443/.extraheader"
    )
    assert (
        plugin.git_environment(repo=ssh)["GIT_CONFIG_KEY_0"]
        == "http.https://gitlab.example.com/.extraheader"
    )


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str | None] = []

    def do_GET(self) -> None:
        _Recorder.seen.append(self.headers.get("Authorization"))
        self.send_response(404)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def loopback_git_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_real_git_sends_the_header_and_never_shows_the_token(
    plugin: GitLabScm, loopback_git_server: str
) -> None:
    _Recorder.seen.clear()
    repo = Repository(name="app", url=f"{loopback_git_server}/g/app.git", scm_provider="gl")
    done = subprocess.run(
        ["git", "ls-remote", repo.url],
        env={**os.environ, **plugin.git_environment(repo=repo)},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    basic = base64.b64encode(f"oauth2:{TOKEN}".encode()).decode()
    assert _Recorder.seen and _Recorder.seen[0] == f"Basic {basic}"
    assert done.returncode != 0
    assert TOKEN not in done.stderr + done.stdout
