"""The azureDevOps provider and webhook settings, where a repository lives, and git's header."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from promoter.config import AzureDevOpsWebhook, Repository, ScmProvider
from promoter.errors import ConfigError
from scm_plugins.azure_devops import AzureDevOpsScm
from scm_plugins.azure_devops.credentials import git_environment
from scm_plugins.azure_devops.repos import Where, locate

SERVICES = "https://dev.azure.com/fabrikam"
SERVER = "https://tfs.corp.example/tfs/DefaultCollection"


def azure(**settings: object) -> ScmProvider:
    return ScmProvider.model_validate(
        {"name": "azure", "azureDevOps": {"token": {"fromEnv": "X"}, **settings}}
    )


@pytest.mark.parametrize(
    "settings",
    [
        {},  # neither organization nor url
        {"organization": "fabrikam", "url": SERVICES},  # both
        {"url": "http://tfs.corp.example/tfs/DefaultCollection"},  # the PAT in clear
        {"organization": "fabrikam", "mergeStrategy": "fastForward"},
        {"organization": "fabrikam", "apiVersion": "latest"},
        {"organization": "fab rikam"},
    ],
)
def test_a_provider_that_cannot_be_served_safely_is_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        azure(**settings)


def test_an_organization_a_server_collection_and_a_loopback_test_instance_are_served() -> None:
    assert azure(organization="fabrikam").azure_devops.base_url == SERVICES  # type: ignore[union-attr]
    assert azure(url=SERVER + "/").azure_devops.base_url == SERVER  # type: ignore[union-attr]
    local = azure(url="http://127.0.0.1:8080/fabrikam")
    assert local.kind == "azure-devops"


@pytest.mark.parametrize(
    "webhook",
    [
        {"header": "X-Promoter-Token"},  # a header without its values
        {"tokens": [{"fromEnv": "T"}]},  # values without the header
        {"username": "azure"},  # a user name without a password
        {"header": "X Promoter", "tokens": [{"fromEnv": "T"}]},  # not a header name
    ],
)
def test_webhook_settings_that_would_accept_anyone_or_nothing_are_refused(
    webhook: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        AzureDevOpsWebhook.model_validate(webhook)


@pytest.mark.parametrize(
    ("url", "path", "base", "where"),
    [
        (f"{SERVICES}/Platform/_git/gitops", None, SERVICES, ("Platform", "gitops")),
        (
            "https://fabrikam@dev.azure.com/fabrikam/Fabrikam%20Fiber/_git/gitops",
            None,
            SERVICES,
            ("Fabrikam Fiber", "gitops"),
        ),
        (f"{SERVICES}/_git/gitops", None, SERVICES, ("gitops", "gitops")),
        (f"{SERVER}/Platform/_git/gitops.git", None, SERVER, ("Platform", "gitops")),
        (
            "https://fabrikam.visualstudio.com/Platform/_git/gitops",
            None,
            SERVICES,
            ("Platform", "gitops"),
        ),
        (
            "git@ssh.dev.azure.com:v3/fabrikam/Platform/gitops",
            "Platform/gitops",
            SERVICES,
            ("Platform", "gitops"),
        ),
        (f"{SERVICES}/Platform/_git/gitops", "gitops", SERVICES, ("Default", "gitops")),
    ],
)
def test_where_a_repository_lives_is_read_from_its_path_or_its_url(
    url: str, path: str | None, base: str, where: tuple[str, str]
) -> None:
    repo = Repository(name="gitops", url=url, scm_provider="azure", path=path)
    found = locate(repo, base_url=base, project="Default")
    assert (found.project, found.name) == where
    assert Where(*where).api.endswith("/_apis/git/repositories/gitops")


def test_a_repository_whose_project_cannot_be_told_is_a_preflight_problem() -> None:
    provider = azure(organization="fabrikam")
    repos = [
        Repository(name="ssh", url="git@ssh.dev.azure.com:v3/fabrikam/P/r", scm_provider="azure"),
        Repository(name="bare", url=f"{SERVICES}/P/_git/r", scm_provider="azure", path="r"),
        Repository(name="ok", url=f"{SERVICES}/P/_git/r", scm_provider="azure"),
    ]
    problems = dict(AzureDevOpsScm.preflight(provider=provider, repositories=repos))
    assert sorted(problems) == ["bare", "ssh"]
    with pytest.raises(ConfigError):
        locate(repos[1], base_url=SERVICES, project=None)


def test_git_gets_the_pat_as_a_basic_header_for_the_origin_only(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    env = git_environment(
        repo_url="https://fabrikam@dev.azure.com/fabrikam/P/_git/r",
        base_url=SERVICES,
        token="pat-0123",
        ca_bundle=str(bundle),
    )
    basic = base64.b64encode(b":pat-0123").decode()
    assert env == {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "http.https://dev.azure.com/.extraheader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        "GIT_CONFIG_KEY_1": "http.https://dev.azure.com/.sslCAInfo",
        "GIT_CONFIG_VALUE_1": str(bundle),
    }
