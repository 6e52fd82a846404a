"""Fixtures for the GitHub plugin's tests: a real bare repository, the fake GitHub, the plugin."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from promoter.config import GitHubApp, GitHubProvider, Repository, ScmProvider
from promoter.config.secrets import SecretRef
from promoter.metrics import REGISTRY
from scm_plugins.github import GitHubScm
from tests.gitrepo import GitSandbox

from .fake_github import FakeApp, FakeGitHub
from .genuine import Genuine

TOKEN = "ghp_SeCrEtT0ken0000000000000000000000abcd"
TOKEN_ENV = "PROMOTER_TEST_GITHUB_TOKEN"
FULL_NAME = "acme/deploy"
APP_ID = 31337


def scm_calls(**labels: str) -> float:
    """Sum of ``promoter_scm_calls_total{provider="github", **labels}``."""
    wanted = {"provider": "github", **labels}
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name == "promoter_scm_calls_total" and all(
                sample.labels.get(k) == v for k, v in wanted.items()
            ):
                total += sample.value
    return total


@pytest.fixture(scope="session")
def genuine(genuine_fixtures: Path) -> Genuine:
    return Genuine(genuine_fixtures)


@pytest.fixture(scope="session")
def app_key() -> tuple[str, str]:
    """A fresh RSA key pair for a test GitHub App: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.fixture
def sandbox(tmp_path: Path) -> GitSandbox:
    """A bare repository with environment/dev active and environment/dev-next one commit ahead."""
    box = GitSandbox(tmp_path, name="deploy")
    box.commit("environment/dev", {"app.yaml": "image: v1\n"}, "hydrate v1")
    box.set_branch("environment/dev-next", box.branch_sha("environment/dev") or "")
    box.commit("environment/dev-next", {"app.yaml": "image: v2\n"}, "hydrate v2")
    return box


@pytest.fixture
def fake(genuine: Genuine, sandbox: GitSandbox, app_key: tuple[str, str]) -> Iterator[FakeGitHub]:
    app = FakeApp(app_id=APP_ID, public_key_pem=app_key[1])
    with FakeGitHub(genuine, tokens=(TOKEN,), app=app) as github:
        github.add_repository(FULL_NAME, sandbox.path)
        yield github


@pytest.fixture
def repo() -> Repository:
    return Repository(name="deploy", url=f"https://github.com/{FULL_NAME}.git", scm_provider="gh")


@pytest.fixture
def token_provider(monkeypatch: pytest.MonkeyPatch) -> ScmProvider:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return ScmProvider(name="gh", github=GitHubProvider(token=SecretRef(from_env=TOKEN_ENV)))


@pytest.fixture
def app_provider(tmp_path: Path, app_key: tuple[str, str]) -> Callable[..., ScmProvider]:
    """An App provider; keyword arguments go to GitHubProvider (and ``installation_id``)."""
    key_file = tmp_path / "app.pem"
    key_file.write_text(app_key[0])

    def build(installation_id: int | None = None, **github: object) -> ScmProvider:
        app = GitHubApp(
            app_id=APP_ID,
            private_key=SecretRef(from_file=str(key_file)),
            installation_id=installation_id,
        )
        return ScmProvider(name="gh", github=GitHubProvider(app=app, **github))

    return build


@pytest.fixture
def make_plugin(tmp_path: Path) -> Iterator[Callable[[ScmProvider], GitHubScm]]:
    built: list[GitHubScm] = []

    def make(provider: ScmProvider) -> GitHubScm:
        plugin = GitHubScm(provider=provider, state_dir=str(tmp_path / "state"))
        built.append(plugin)
        return plugin

    yield make
    for plugin in built:
        plugin.close()


@pytest.fixture
def plugin(
    fake: FakeGitHub, token_provider: ScmProvider, make_plugin: Callable[[ScmProvider], GitHubScm]
) -> GitHubScm:
    return make_plugin(token_provider)
