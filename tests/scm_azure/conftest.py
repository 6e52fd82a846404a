"""Fixtures of the Azure DevOps plugin's tests: the fake Azure DevOps over a real repository."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import init_bare
from promoter.config import Repository, ScmProvider, parse_config
from promoter.wiring import Daemon
from scm_plugins.azure_devops import AzureDevOpsScm
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .azure_ci import HOOK_ENV, HOOK_PASSWORD, AzureCI, config_text
from .fake_azure import FakeAzure
from .fake_state import FakeRepo
from .names import BIN, NAME, PROJECT, TOKEN, TOKEN_ENV

__all__ = ["BIN", "NAME", "PROJECT", "TOKEN", "TOKEN_ENV", "build_plugin", "provider"]


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "remote.git")


@pytest.fixture
def azure(bare: Path) -> Iterator[FakeAzure]:
    with FakeAzure(token=TOKEN) as fake:
        fake.add_repository(PROJECT, NAME, bare)
        yield fake


@pytest.fixture
def fake_repo(azure: FakeAzure) -> FakeRepo:
    return azure.repo(PROJECT, NAME)


def provider(url: str, **settings: object) -> ScmProvider:
    return ScmProvider.model_validate(
        {
            "name": "azure",
            "azureDevOps": {"url": url, "token": {"fromEnv": TOKEN_ENV}, **settings},
        }
    )


def build_plugin(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: object
) -> AzureDevOpsScm:
    """The plugin, built in process as the registry builds it, for the fake at ``url``."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return AzureDevOpsScm(provider=provider(url, **settings), state_dir=str(tmp_path / "state"))


@pytest.fixture
def plugin(
    azure: FakeAzure, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AzureDevOpsScm]:
    built = build_plugin(azure.url, tmp_path, monkeypatch)
    yield built
    built.close()


@pytest.fixture
def repo(azure: FakeAzure, fake_repo: FakeRepo) -> Repository:
    return Repository(name="gitops", url=azure.clone_url(fake_repo), scm_provider="azure")


@pytest.fixture
def harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[AzureCI]:
    """The daemon on the fake; ``request.param`` holds more ``config_text`` settings."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_PASSWORD)
    gitops = GitOpsRepo.create(tmp_path)
    with FakeAzure(token=TOKEN) as fake:
        repo = fake.add_repository(PROJECT, NAME, gitops.path)
        settings: dict[str, Any] = getattr(request, "param", {})
        text = config_text(fake.clone_url(repo), tmp_path / "state", fake.url, **settings)
        daemon = Daemon(parse_config(text))
        with TestClient(daemon.app) as client:
            ci = AzureCI(client, daemon.runtime, fake, repo, gitops)
            wait_for(
                lambda: ci.env(ENVIRONMENTS[-1])["state"] == "up-to-date", what="a first reconcile"
            )
            for branch in ENVIRONMENTS:
                ci.status(gitops.tip(branch), "health")
            ci.settle()
            try:
                yield ci
            finally:
                ci.close()
