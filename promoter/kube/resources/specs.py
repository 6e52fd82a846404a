"""The custom resources' specs and statuses as pydantic models: the source of the CRDs.

A ``PromotionStrategy``'s spec is built from ``promoter.config.PromotionStrategy`` itself
(every field but ``name``, with ``repository`` as ``gitRepositoryRef``), so promoter.yaml
and the cluster never drift apart. Credentials are Secret references, never inline.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from promoter.config import Duration, ExternalPlugin, LocalProvider, PromotionStrategy, Repository
from promoter.config.base import Spec
from promoter.kube.client.group import GROUP, VERSION
from promoter.models import Phase

API_VERSION = f"{GROUP}/{VERSION}"
REFRESH_ANNOTATION = f"{GROUP}/refreshedAt"
"""Set by any replica that received a webhook; the leader's watch sees it and reconciles."""
COMMIT_STATUS_LABEL = f"{GROUP}/commit-status"
"""The label that names a CommitStatus's gate key (``spec.key`` wins when both are given)."""


class ObjectRef(Spec):
    """A reference to an object of the same namespace, by name."""

    name: str = Field(min_length=1, max_length=253)


class SecretRef(Spec):
    """A Secret of the same namespace; the keys read depend on the provider kind."""

    name: str = Field(min_length=1, max_length=253)


# --- ScmProvider -------------------------------------------------------------------------


class GitHubSpec(Spec):
    """GitHub or GHES. Secret keys: ``token``, or ``githubAppPrivateKey`` with ``appID``."""

    url: str = Field(default="https://api.github.com", description="API base URL.")
    app_id: int | None = Field(default=None, alias="appID", description="GitHub App id.")
    installation_id: int | None = Field(
        default=None, alias="installationID", description="App installation id."
    )
    merge_method: Literal["merge", "squash", "rebase"] = "merge"
    status_checks: Literal["statuses", "checkRuns"] = "statuses"


class GitLabSpec(Spec):
    """gitlab.com or self-managed. Secret key: ``token``."""

    url: str = Field(default="https://gitlab.com")
    pipeline_gate_key: str = "pipeline"
    squash: bool = False


class ScmProviderSpec(Spec):
    """Exactly one of github, gitlab, local, plugin; credentials from ``secretRef``."""

    secret_ref: SecretRef | None = Field(
        default=None, description="The Secret holding the credentials (github, gitlab)."
    )
    github: GitHubSpec | None = None
    gitlab: GitLabSpec | None = None
    local: LocalProvider | None = None
    plugin: ExternalPlugin | None = None


# --- GitRepository -----------------------------------------------------------------------


class GitRepositorySpec(Spec):
    """A git repository and the ScmProvider (same namespace) that serves it."""

    url: str = Field(description=Repository.model_fields["url"].description)
    scm_provider_ref: ObjectRef
    path: str | None = Field(default=None, description=Repository.model_fields["path"].description)
    project_id: int | None = Field(default=None, description="GitLab numeric project id.")
    poll_interval: Duration | None = Field(
        default=None, description=Repository.model_fields["poll_interval"].description
    )


# --- PromotionStrategy -------------------------------------------------------------------


def _strategy_spec() -> type[Spec]:
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in PromotionStrategy.model_fields.items()
        if name not in ("name", "repository")
    }
    fields["git_repository_ref"] = (ObjectRef, Field(description="The GitRepository to promote."))
    return create_model(
        "PromotionStrategySpec",
        __base__=Spec,
        __doc__="promotionStrategies[] of promoter.yaml, with gitRepositoryRef for repository.",
        **fields,
    )


PromotionStrategySpec = _strategy_spec()


class Condition(BaseModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: datetime = Field(alias="lastTransitionTime")
    observed_generation: int | None = Field(default=None, alias="observedGeneration")


class GateStatus(BaseModel):
    """The gates of one commit folded into one phase (success only when all are)."""

    phase: Phase
    description: str = ""


class CommitState(BaseModel):
    dry_sha: str | None = Field(default=None, alias="drySha")
    hydrated_sha: str | None = Field(default=None, alias="hydratedSha")
    commit_status: GateStatus | None = Field(default=None, alias="commitStatus")


class HealthyDrySha(BaseModel):
    sha: str
    time: datetime


class PullRequestRef(BaseModel):
    number: int
    url: str = ""
    state: str = ""


class EnvironmentStatus(BaseModel):
    branch: str
    state: str = Field(description="promoted, waiting, blocked, ... (the engine's verdict)")
    reason: str = ""
    active: CommitState = Field(default_factory=CommitState)
    proposed: CommitState = Field(default_factory=CommitState)
    pull_request: PullRequestRef | None = Field(default=None, alias="pullRequest")
    last_healthy_dry_shas: list[HealthyDrySha] = Field(
        default_factory=list, alias="lastHealthyDryShas"
    )
    holds: list[str] = Field(default_factory=list, description="Dry SHAs held out.")


class PromotionStrategyStatus(BaseModel):
    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    conditions: list[Condition] = Field(default_factory=list)
    environments: list[EnvironmentStatus] = Field(default_factory=list)


class ReadyStatus(BaseModel):
    """The status of GitRepository and ScmProvider objects: a Ready condition."""

    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    conditions: list[Condition] = Field(default_factory=list)


# --- CommitStatus ------------------------------------------------------------------------


class CommitStatusSpec(Spec):
    """A gate result any tool can write; the promoter gates on it and mirrors it to the SCM."""

    git_repository_ref: ObjectRef
    sha: str = Field(pattern=r"^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$")
    key: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description=f"The gate key; default: the label {COMMIT_STATUS_LABEL}.",
    )
    phase: Phase
    description: str = Field(default="", max_length=1024)
    url: str = Field(default="", max_length=2048)


class CommitStatusStatus(BaseModel):
    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    conditions: list[Condition] = Field(default_factory=list)
    mirrored_phase: Phase | None = Field(
        default=None, alias="mirroredPhase", description="The phase last published on the SCM."
    )
