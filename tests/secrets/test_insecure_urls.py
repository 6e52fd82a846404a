"""A token never travels over plain http:// to another machine unless the config says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider, parse_config
from promoter.errors import ConfigError
from scm_plugins.registry import build_plugin


def config(provider: str, repo_url: str, *, extra: str = "") -> str:
    return f"""scmProviders:
  - name: scm
    {provider}
repositories:
  - name: app
    url: {repo_url}
    scmProvider: scm
promotionStrategies:
  - {{name: app, repository: app, environments: [{{branch: environment/dev}}]}}
{extra}"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config(text, source="p.yaml")
    return raised.value.problems


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_an_http_api_url_on_another_host_is_refused_at_its_line(kind: str) -> None:
    provider = f"{kind}: {{url: http://scm.example.com/api, token: {{fromEnv: T}}}}"
    (problem,) = problems(config(provider, "https://scm.example.com/acme/app.git"))
    assert problem.startswith("p.yaml:3:")
    assert "in clear over http://" in problem and "allowInsecure" in problem


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_an_http_repository_url_on_another_host_is_refused_at_its_line(kind: str) -> None:
    provider = f"{kind}: {{token: {{fromEnv: T}}}}"
    (problem,) = problems(config(provider, "http://user:pw@scm.example.com/acme/app.git"))
    assert problem.startswith("p.yaml:6:")
    assert "repositories[0].url" in problem and "allowInsecure" in problem
    assert "user:pw" not in problem


@pytest.mark.parametrize("kind", ["github", "gitlab"])
@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost", "[::1]:3000"])
def test_plain_http_to_this_machine_is_allowed(kind: str, host: str) -> None:
    provider = f"{kind}: {{url: 'http://{host}/api', token: {{fromEnv: T}}}}"
    parse_config(config(provider, f"'http://{host}/acme/app.git'"))


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_allow_insecure_lets_plain_http_through(kind: str) -> None:
    provider = f"{kind}: {{url: http://scm.lan/api, token: {{fromEnv: T}}, allowInsecure: true}}"
    parse_config(config(provider, "http://scm.lan/acme/app.git"))


def test_a_repository_without_a_token_may_use_plain_http(tmp_path: Path) -> None:
    parse_config(config("local: {}", "http://git.example.com/app.git"))


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_plugin_built_without_the_loader_still_refuses_to_send_the_token(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMOTER_T_TOKEN", "glpat-abcdefghijklmnop")
    provider = ScmProvider.model_validate(
        {"name": "scm", kind: {"token": {"fromEnv": "PROMOTER_T_TOKEN"}}}
    )
    repo = Repository(name="app", url="http://scm.example.com/acme/app.git", scm_provider="scm")
    plugin = build_plugin(provider, state_dir=str(tmp_path))
    try:
        with pytest.raises(ConfigError, match="in clear"):
            plugin.git_environment(repo=repo)
    finally:
        plugin.close()
