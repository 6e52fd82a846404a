"""Fixtures of the Azure DevOps plugin's tests: the fake Azure DevOps over a real repository."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import init_bare
from promoter.config import Repository, ScmProvider
from scm_plugins.azure_devops import AzureDevOpsScm

from .fake_azure import FakeAzure
from .fake_state import FakeRepo

TOKEN = "azure-devops-test-pat-0123456789abcdef"
TOKEN_ENV = "PROMOTER_TEST_AZURE_DEVOPS_PAT"
PROJECT, NAME = "Fabrikam Fiber", "gitops"
BIN = Path(sys.executable).parent
"""Where pip installed the ``promoter-scm-azure-devops`` console script (the venv's bin)."""


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


@pytest.fixture
def plugin(
    azure: FakeAzure, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AzureDevOpsScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    built = AzureDevOpsScm(provider=provider(azure.url), state_dir=str(tmp_path / "state"))
    yield built
    built.close()


@pytest.fixture
def repo(azure: FakeAzure, fake_repo: FakeRepo) -> Repository:
    return Repository(name="gitops", url=azure.clone_url(fake_repo), scm_provider="azure")
