"""Empty or whitespace-only secrets are refused when the configuration loads, never used."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config import SecretRef, load_config
from promoter.errors import ConfigError
from promoter.http import Credentials
from promoter.wiring import Daemon
from tests.support import GitOpsRepo
from webhooks import Forgejo, GitHub, GitHubSignature, GitLab


def write_config(tmp_path: Path, gitops: GitOpsRepo, secret_file: Path, where: str) -> Path:
    """A local config whose secret at ``where`` (github, gitlab or api) reads ``secret_file``."""
    ref = f"{{fromFile: {secret_file}}}"
    hooks = {
        "github": f"webhooks:\n  github:\n    secrets: [{ref}]\n",
        "gitlab": f"webhooks:\n  gitlab:\n    tokens: [{ref}]\n",
        "api": "",
    }[where]
    api = f"\n  apiToken: {ref}" if where == "api" else ""
    path = tmp_path / "promoter.yaml"
    path.write_text(
        "scmProviders: [{name: local, local: {}}]\n"
        f"repositories: [{{name: gitops, url: {gitops.path}, scmProvider: local}}]\n"
        "promotionStrategies:\n"
        "  - {name: app, repository: gitops, environments: [{branch: environment/dev}]}\n"
        f"{hooks}"
        f"daemon:\n  host: 0.0.0.0\n  stateDir: {tmp_path / 'state'}{api}\n"
    )
    return path


@pytest.mark.parametrize("content", ["", "\n", "   \n", "\t \r\n"])
def test_an_empty_or_blank_secret_file_is_refused(tmp_path: Path, content: str) -> None:
    secret = tmp_path / "secret"
    secret.write_text(content)
    with pytest.raises(ConfigError, match="empty or only whitespace"):
        SecretRef(from_file=str(secret)).resolve()


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_an_empty_or_blank_environment_secret_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("PROMOTER_T_EMPTY", value)
    with pytest.raises(ConfigError):
        SecretRef(from_env="PROMOTER_T_EMPTY").resolve()


@pytest.mark.parametrize("where", ["github", "gitlab", "api"])
def test_loading_with_secrets_names_the_file_and_line_of_an_empty_secret(
    tmp_path: Path, where: str
) -> None:
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev"])
    secret = tmp_path / "secret"
    secret.write_text("  \n")
    path = write_config(tmp_path, gitops, secret, where)
    load_config(path)  # reading the state needs no secret
    with pytest.raises(ConfigError) as raised:
        load_config(path, resolve_secrets=True)
    (problem,) = raised.value.problems
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if str(secret) in text)
    assert problem.startswith(f"{path}:{line}:")
    assert "empty or only whitespace" in problem


@pytest.mark.parametrize("where", ["github", "gitlab", "api"])
def test_a_daemon_never_starts_with_an_empty_secret(tmp_path: Path, where: str) -> None:
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev"])
    secret = tmp_path / "secret"
    secret.write_text("\n")
    config = load_config(write_config(tmp_path, gitops, secret, where))
    with pytest.raises(ConfigError, match="empty or only whitespace"):
        Daemon(config)


def test_an_empty_key_cannot_sign_a_github_delivery() -> None:
    with pytest.raises(ConfigError):
        GitHub([""])
    github = GitHub(["a real secret"])
    body = b'{"zen": "hi"}'
    assert not github.authenticate({"x-hub-signature-256": GitHubSignature.sign("", body)}, body)


def test_an_empty_forgejo_secret_is_refused() -> None:
    with pytest.raises(ConfigError):
        Forgejo(["\n"])


def test_an_empty_gitlab_token_is_refused_and_never_matches() -> None:
    with pytest.raises(ConfigError):
        GitLab([" "], [])
    gitlab = GitLab(["a real token"], [])
    assert not gitlab.authenticate({"x-gitlab-token": ""}, b"{}")


def test_an_empty_bearer_never_authorizes_a_write(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Credentials(tokens={"api-token": " "})
    gitops = GitOpsRepo.create(tmp_path, ["environment/dev"])
    secret = tmp_path / "secret"
    secret.write_text("a-real-api-token\n")
    config = load_config(write_config(tmp_path, gitops, secret, "api"))
    with TestClient(Daemon(config).app) as client:
        for header in ("Bearer ", "Bearer", "bearer  "):
            answer = client.post("/api/v1/refresh", headers={"authorization": header})
            assert answer.status_code == 401
        good = client.post(
            "/api/v1/refresh", json={}, headers={"authorization": "Bearer a-real-api-token"}
        )
        assert good.status_code == 202
