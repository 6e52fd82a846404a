"""Fixtures of the Bitbucket plugins' tests: the fakes over a real bare repository, the plugins."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import init_bare
from promoter.config import Repository, ScmProvider
from scm_plugins.bitbucket_cloud import BitbucketCloudScm
from scm_plugins.bitbucket_datacenter import BitbucketDataCenterScm

from .fake_cloud import FakeCloud
from .fake_datacenter import FakeDataCenter

USERNAME, PASSWORD = "promoter-bot", "cloud-app-password-0123456789"
PASSWORD_ENV = "PROMOTER_TEST_BITBUCKET_CLOUD_PASSWORD"
TOKEN = "dc-http-access-token-0123456789"
TOKEN_ENV = "PROMOTER_TEST_BITBUCKET_DC_TOKEN"
WORKSPACE_REPO = "acme/gitops"
PROJECT_REPO = "OPS/gitops"
BIN = Path(sys.executable).parent
"""Where pip installed the ``promoter-scm-bitbucket-*`` console scripts (the venv's bin)."""


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "remote.git")


@pytest.fixture
def cloud(bare: Path) -> Iterator[FakeCloud]:
    with FakeCloud(username=USERNAME, password=PASSWORD) as fake:
        fake.add_repository(WORKSPACE_REPO, bare)
        yield fake


@pytest.fixture
def datacenter(bare: Path) -> Iterator[FakeDataCenter]:
    with FakeDataCenter(token=TOKEN) as fake:
        fake.add_repository(PROJECT_REPO, bare)
        yield fake


def cloud_provider(url: str, **more: object) -> ScmProvider:
    section = {
        "url": url,
        "username": USERNAME,
        "password": {"fromEnv": PASSWORD_ENV},
        **more,
    }
    return ScmProvider.model_validate({"name": "bitbucket", "bitbucketCloud": section})


def datacenter_provider(url: str, **more: object) -> ScmProvider:
    section = {"url": url, "token": {"fromEnv": TOKEN_ENV}, **more}
    return ScmProvider.model_validate({"name": "bitbucket", "bitbucketDataCenter": section})


@pytest.fixture
def cloud_plugin(
    cloud: FakeCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BitbucketCloudScm]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    plugin = BitbucketCloudScm(provider=cloud_provider(cloud.url), state_dir=str(tmp_path))
    yield plugin
    plugin.close()


@pytest.fixture
def datacenter_plugin(
    datacenter: FakeDataCenter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BitbucketDataCenterScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    provider = datacenter_provider(datacenter.base_url)
    plugin = BitbucketDataCenterScm(provider=provider, state_dir=str(tmp_path))
    yield plugin
    plugin.close()


def cloud_repo(bare: Path) -> Repository:
    return Repository(name="gitops", url=str(bare), scm_provider="bitbucket", path=WORKSPACE_REPO)


def datacenter_repo(bare: Path) -> Repository:
    return Repository(name="gitops", url=str(bare), scm_provider="bitbucket", path=PROJECT_REPO)
