"""Credentials: tokens, GitHub App installation tokens, GHES, and git over HTTPS."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from promoter.config import GitHubProvider, Repository, ScmProvider
from promoter.config.secrets import SecretRef
from promoter.errors import ConfigError, ScmAuthError, ScmNotFound
from scm_plugins.github import GitHubScm
from scm_plugins.github.auth import RENEW_BEFORE
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, TOKEN, TOKEN_ENV
from .fake_github import FakeGitHub
from .genuine import Genuine
from .git_http import git_http_server

DEV, DEV_NEXT = "environment/dev", "environment/dev-next"


def find(plugin: GitHubScm, repo: Repository) -> None:
    plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV)


def test_a_token_goes_in_the_authorization_header_and_nowhere_else(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub
) -> None:
    find(plugin, repo)
    [call] = fake.calls
    assert call.authorization == f"token {TOKEN}"
    assert TOKEN not in call.path and TOKEN not in str(call.query)


def test_a_refused_token_is_an_auth_error(
    fake: FakeGitHub,
    token_provider: ScmProvider,
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    fake.tokens.clear()
    with pytest.raises(ScmAuthError, match="401: Bad credentials"):
        find(make_plugin(token_provider), repo)


def test_an_app_finds_its_installation_once_per_owner_and_reuses_its_token(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    plugin = make_plugin(app_provider())
    for _ in range(3):
        find(plugin, repo)
    paths = [call.path for call in fake.calls]
    assert paths.count(f"/repos/{FULL_NAME}/installation") == 1
    assert paths.count("/app/installations/4242/access_tokens") == 1
    assert fake.calls[0].authorization.startswith("Bearer ey")  # a JWT
    assert fake.app is not None
    assert fake.calls[-1].authorization == f"token {fake.app.issued[0]}"


def test_an_app_not_installed_on_the_owner_says_so(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
) -> None:
    elsewhere = Repository(name="x", url="https://github.com/other/repo.git", scm_provider="gh")
    with pytest.raises(ScmNotFound, match="App 31337 is not installed on other/repo"):
        find(make_plugin(app_provider()), elsewhere)


def test_a_configured_installation_id_skips_the_lookup(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    find(make_plugin(app_provider(installation_id=4242)), repo)
    assert [call.path for call in fake.calls][:1] == ["/app/installations/4242/access_tokens"]


def test_an_installation_token_is_renewed_before_it_expires(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    assert fake.app is not None
    fake.app.token_ttl = RENEW_BEFORE - 10  # every token is already "about to expire"
    plugin = make_plugin(app_provider())
    find(plugin, repo)
    find(plugin, repo)
    assert len(fake.app.issued) == 2
    assert fake.calls[-1].authorization == f"token {fake.app.issued[1]}"


def test_a_revoked_installation_token_is_replaced_once(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    assert fake.app is not None
    plugin = make_plugin(app_provider())
    find(plugin, repo)
    fake.installation_tokens.clear()  # revoked on GitHub's side
    find(plugin, repo)
    assert len(fake.app.issued) == 2
    assert [c.status for c in fake.calls if c.path.endswith("/pulls")][-2:] == [401, 304]


def test_a_bad_app_private_key_is_a_configuration_error_that_does_not_show_it(
    tmp_path: Path, app_provider: Callable[..., ScmProvider]
) -> None:
    provider = app_provider()
    assert provider.github is not None and provider.github.app is not None
    Path(str(provider.github.app.private_key.from_file)).write_text("-----BEGIN nonsense")
    with pytest.raises(ConfigError) as raised:
        GitHubScm(provider=provider, state_dir=str(tmp_path))
    assert "BEGIN" not in str(raised.value)
    assert raised.value.__cause__ is None


def test_a_token_with_whitespace_is_refused_without_being_echoed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "ghp_abc def")
    provider = ScmProvider(name="gh", github=GitHubProvider(token=SecretRef(from_env=TOKEN_ENV)))
    with pytest.raises(ConfigError) as raised:
        GitHubScm(provider=provider, state_dir=str(tmp_path))
    assert "abc" not in str(raised.value) and TOKEN_ENV in str(raised.value)


def test_github_enterprise_server_is_reached_through_its_api_prefix(
    genuine: Genuine,
    sandbox: GitSandbox,
    monkeypatch: pytest.MonkeyPatch,
    make_plugin: Callable[[ScmProvider], GitHubScm],
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    ghes = "https://ghe.example.test/api/v3"
    provider = ScmProvider(
        name="ghes", github=GitHubProvider(url=ghes, token=SecretRef(from_env=TOKEN_ENV))
    )
    repo = Repository(
        name="deploy", url=f"https://ghe.example.test/{FULL_NAME}.git", scm_provider="ghes"
    )
    with FakeGitHub(
        genuine, base_url=ghes, html_url="https://ghe.example.test", tokens=(TOKEN,)
    ) as fake:
        fake.add_repository(FULL_NAME, sandbox.path)
        pr = make_plugin(provider).open_pull_request(
            repo=repo, head=DEV_NEXT, base=DEV, title="t", body="b", labels=()
        )
    assert pr.url == f"https://ghe.example.test/{FULL_NAME}/pull/{pr.number}"
    assert [c.path for c in fake.calls] == [f"/repos/{FULL_NAME}/pulls"]


def test_git_environment_sends_the_token_as_an_extra_header_for_the_origin_only(
    plugin: GitHubScm,
) -> None:
    repo = Repository(name="d", url="https://x-user@github.com/acme/deploy.git", scm_provider="gh")
    env = plugin.git_environment(repo=repo)
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_COUNT"] == "1"
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"
    scheme, _, encoded = env["GIT_CONFIG_VALUE_0"].partition(" basic ")
    assert scheme == "AUTHORIZATION:"
    assert base64.b64decode(encoded).decode() == f"x-access-token:{TOKEN}"
    assert all(TOKEN not in value for value in env.values())


def test_a_local_path_needs_no_credentials(plugin: GitHubScm) -> None:
    repo = Repository(name="d", url="/srv/git/deploy.git", path=FULL_NAME, scm_provider="gh")
    assert plugin.git_environment(repo=repo) == {"GIT_TERMINAL_PROMPT": "0"}


def run_git(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return done.stdout


@pytest.mark.parametrize("kind", ["token", "app"])
def test_git_fetches_and_pushes_over_http_with_the_plugins_credentials(
    kind: str,
    fake: FakeGitHub,
    token_provider: ScmProvider,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    sandbox: GitSandbox,
    tmp_path: Path,
) -> None:
    (tmp_path / "root" / "acme").mkdir(parents=True)
    (tmp_path / "root" / "acme" / "deploy.git").symlink_to(sandbox.path)
    sandbox.git("config", "http.receivepack", "true")
    plugin = make_plugin(token_provider if kind == "token" else app_provider())
    accepted = {"basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()}
    with git_http_server(tmp_path / "root", accepted=accepted) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/acme/deploy.git"
        repo = Repository(name="deploy", url=url, path=FULL_NAME, scm_provider="gh")
        env = dict(plugin.git_environment(repo=repo))
        if kind == "app":
            assert fake.app is not None
            accepted.add(
                "basic "
                + base64.b64encode(f"x-access-token:{fake.app.issued[-1]}".encode()).decode()
            )
        with pytest.raises(AssertionError, match=r"terminal prompts disabled|Authentication"):
            run_git("ls-remote", url, env={"GIT_TERMINAL_PROMPT": "0"})
        clone = tmp_path / "clone"
        run_git("clone", "--quiet", "--branch", DEV_NEXT, url, str(clone), env=env)
        (clone / "app.yaml").write_text("image: v9\n")
        run_git("commit", "--quiet", "-am", "hydrate v9", cwd=clone)
        run_git("push", "--quiet", "origin", f"HEAD:{DEV_NEXT}", cwd=clone, env=env)
        config = (clone / ".git" / "config").read_text()
    assert sandbox.show(f"{DEV_NEXT}:app.yaml") == "image: v9"
    assert "x-access-token" not in config and "extraheader" not in config
    assert run_git("remote", "get-url", "origin", cwd=clone).strip() == url
