"""The SCM providers of promoter.yaml (``scmProviders``): where each SCM lives and how to
log in to it: GitHub, GitLab, Azure DevOps, the embedded local SCM, or an out-of-process
plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from promoter.config.base import Spec
from promoter.config.bitbucket import BitbucketCloudProvider, BitbucketDataCenterProvider
from promoter.config.durations import Duration
from promoter.config.secrets import SecretRef
from promoter.config.transport import insecure, refusal

ALLOW_INSECURE = (
    "Let the token travel over plain http:// to a host that is not loopback (its API URL "
    "and its repositories' URLs). For a test instance only: anyone on the path reads it."
)


class GitHubApp(Spec):
    app_id: int = Field(description="The GitHub App's numeric id.")
    private_key: SecretRef = Field(description="The App's PEM private key.")
    installation_id: int | None = Field(
        default=None, description="Installation id; found per owner and cached when omitted."
    )


class GitHubProvider(Spec):
    url: str = Field(
        default="https://api.github.com",
        description="API base URL; for GitHub Enterprise Server, https://HOST/api/v3.",
    )
    token: SecretRef | None = Field(default=None, description="A personal or fine-grained token.")
    app: GitHubApp | None = Field(default=None, description="GitHub App credentials.")
    merge_method: Literal["merge", "squash", "rebase"] = "merge"
    status_checks: Literal["statuses", "checkRuns"] = Field(
        default="statuses",
        description="How the promoter shows its own gates: commit statuses, or check runs "
        "(App only).",
    )
    allow_insecure: bool = Field(default=False, description=ALLOW_INSECURE)

    @model_validator(mode="after")
    def _one_credential(self) -> GitHubProvider:
        if insecure(self.url) and not self.allow_insecure:
            raise ValueError(refusal(self.url, "url"))
        if (self.token is None) == (self.app is None):
            raise ValueError("give exactly one of token or app")
        if self.status_checks == "checkRuns" and self.app is None:
            raise ValueError("statusChecks: checkRuns needs a GitHub App")
        return self


class GitLabProvider(Spec):
    url: str = Field(default="https://gitlab.com", description="gitlab.com or a self-managed URL.")
    token: SecretRef = Field(description="A project, group or personal access token.")
    ca_bundle: str | None = Field(default=None, description="Path to a PEM CA bundle.")
    pipeline_gate_key: str = Field(
        default="pipeline", description="Gate key under which a SHA's latest pipeline is reported."
    )
    squash: bool = False
    allow_insecure: bool = Field(default=False, description=ALLOW_INSECURE)

    @model_validator(mode="after")
    def _https(self) -> GitLabProvider:
        if insecure(self.url) and not self.allow_insecure:
            raise ValueError(refusal(self.url, "url"))
        return self

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle(cls, value: str | None) -> str | None:
        return pem_bundle(value)


def pem_bundle(value: str | None) -> str | None:
    """``value`` when it names a file holding a PEM certificate (``caBundle``)."""
    if value is not None:
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError(f"caBundle {value} is not a file")
        head = path.read_bytes()[:4096]
        if b"-----BEGIN CERTIFICATE-----" not in head:
            raise ValueError(f"caBundle {value} holds no PEM certificate")
    return value


AZURE_SERVICES = "https://dev.azure.com"


class AzureDevOpsProvider(Spec):
    """Azure DevOps Services (an organization) or Azure DevOps Server (a collection)."""

    organization: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="The Azure DevOps Services organization: https://dev.azure.com/ORGANIZATION.",
    )
    url: str | None = Field(
        default=None,
        description="Instead of organization: the organization's URL, or for Azure DevOps "
        "Server the collection's (https://HOST/tfs/DefaultCollection).",
    )
    project: str | None = Field(
        default=None, description="The project of the repositories whose path names none."
    )
    token: SecretRef = Field(
        description="A personal access token (PAT), sent as basic auth with an empty user."
    )
    merge_strategy: Literal["noFastForward", "squash", "rebase", "rebaseMerge"] = Field(
        default="noFastForward",
        description="How a pull request is completed: a merge commit, one squashed commit, "
        "the source's commits rebased (fast-forward), or rebased with a merge commit.",
    )
    api_version: str = Field(
        default="7.1",
        pattern=r"^\d+\.\d+$",
        description="The REST API version (Azure DevOps Server 2022: 7.0, 2020: 6.0).",
    )
    ca_bundle: str | None = Field(
        default=None, description="Path to a PEM CA bundle (a Server with its own CA)."
    )
    timeout: Duration = Field(default=30.0, description="Time limit of one API call.")
    allow_insecure: bool = Field(default=False, description=ALLOW_INSECURE)

    @model_validator(mode="after")
    def _one_place(self) -> AzureDevOpsProvider:
        if (self.organization is None) == (self.url is None):
            raise ValueError("give exactly one of organization or url")
        if insecure(self.base_url) and not self.allow_insecure:
            raise ValueError(refusal(self.base_url, "url"))
        return self

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle(cls, value: str | None) -> str | None:
        return pem_bundle(value)

    @property
    def base_url(self) -> str:
        """The organization's or collection's URL, without a trailing slash."""
        if self.url is not None:
            return self.url.rstrip("/")
        return f"{AZURE_SERVICES}/{self.organization}"


class LocalMergeQueue(Spec):
    """The local SCM's merge queue: a queued pull request is merged once the required checks
    pass on its merge group, a merge of it into its base's tip (docs/merge-queues.md)."""

    checks: list[str] = Field(
        min_length=1,
        description="The status keys that must be success on a merge group before the queue "
        "merges it; a failure takes the pull request out of the queue.",
    )
    branches: list[str] = Field(
        default_factory=list,
        description="The base branches that merge through the queue (every branch when empty).",
    )


class LocalProvider(Spec):
    """The embedded SCM: pull requests and statuses in the state dir, merges in local git."""

    merge_method: Literal["merge", "squash", "rebase"] = Field(
        default="merge",
        description="How a pull request is merged, as GitHub and GitLab offer it: a merge "
        "commit, one squashed commit, or the head's commits rebased onto the base. Every "
        "method is a three-way merge, refused as not mergeable when it conflicts.",
    )
    merge_queue: LocalMergeQueue | None = Field(
        default=None,
        description="A merge queue of the local SCM's own, as GitHub's (none when unset).",
    )


class ExternalPlugin(Spec):
    """An out-of-process plugin speaking ``promoter.scm/v1`` (docs/plugin-protocol.md)."""

    name: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9_-]*$",
        description="Finds the executable promoter-scm-NAME in directory, then on PATH.",
    )
    command: list[str] | str | None = Field(
        default=None, description="The executable (and its arguments), instead of name."
    )
    args: list[str] = Field(default_factory=list, description="More arguments for command.")
    directory: str | None = Field(default=None, description="Where to look for NAME first.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the plugin in initialize (never secrets)."
    )
    secrets: dict[str, SecretRef] = Field(
        default_factory=dict,
        description="Resolved by the promoter and passed in initialize, never on a command line.",
    )
    timeout: Duration = Field(default=30.0, description="Time limit of one call.")

    @model_validator(mode="after")
    def _name_or_command(self) -> ExternalPlugin:
        if (self.name is None) == (self.command is None or self.command == []):
            raise ValueError("give exactly one of name or command")
        return self

    def argv(self) -> list[str] | None:
        """The command line given by ``command`` and ``args``; None when found by name."""
        if self.command is None:
            return None
        base = [self.command] if isinstance(self.command, str) else list(self.command)
        return [*base, *self.args]


KINDS = {
    "github": "github",
    "gitlab": "gitlab",
    "bitbucket_cloud": "bitbucket-cloud",
    "bitbucket_data_center": "bitbucket-datacenter",
    "azure_devops": "azure-devops",
    "local": "local",
    "plugin": "plugin",
}
"""Each section of a provider, and the name of the plugin that serves it."""


class ScmProvider(Spec):
    """Where an SCM lives and how to log in: exactly one of github, gitlab, bitbucketCloud,
    bitbucketDataCenter, azureDevOps, local, plugin."""

    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
    github: GitHubProvider | None = None
    gitlab: GitLabProvider | None = None
    bitbucket_cloud: BitbucketCloudProvider | None = None
    bitbucket_data_center: BitbucketDataCenterProvider | None = None
    azure_devops: AzureDevOpsProvider | None = Field(default=None, alias="azureDevOps")
    local: LocalProvider | None = None
    plugin: ExternalPlugin | None = None

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> ScmProvider:
        kinds = [k for k in KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                "give exactly one of github, gitlab, bitbucketCloud, bitbucketDataCenter, "
                "azureDevOps, local or plugin"
            )
        return self

    @property
    def kind(self) -> str:
        """The plugin name that serves this provider."""
        section = next(k for k in KINDS if getattr(self, k) is not None)
        return KINDS[section]
