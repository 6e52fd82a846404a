"""The messages of ``promoter.scm/v1`` as pydantic models: parameters and results of each method.

The same models validate both sides and generate the JSON Schemas that
``promoter schema --plugin-protocol`` publishes. Names are camelCase on the wire.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from promoter.config import Repository
from promoter.models import CommitStatus, PullRequest, Review


class Message(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Additive(Message):
    """A message with members added in v1.1 (``ADDED``): left out while at their default,
    so that a v1 peer, which refuses unknown members, reads it as before."""

    ADDED: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _leave_out_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.ADDED:
            field = type(self).model_fields[name]
            if getattr(self, name) == field.get_default(call_default_factory=True):
                data.pop(name, None)
                data.pop(field.alias or name, None)
        return data

    def as_v1(self) -> Any:
        """This message as a peer that picked v1 must see it: v1.1's members at their default."""
        fields = type(self).model_fields
        defaults = {
            name: fields[name].get_default(call_default_factory=True) for name in self.ADDED
        }
        return self.model_copy(update=defaults)


class RepositoryRef(Message):
    """The repository a call is about, as configured in promoter.yaml."""

    name: str
    url: str
    full_path: str = Field(description="owner/name or group/sub/project")
    project_id: int | None = None

    @classmethod
    def of(cls, repo: Repository) -> RepositoryRef:
        return cls(
            name=repo.name, url=repo.url, full_path=repo.full_path, project_id=repo.project_id
        )

    def repository(self, provider: str) -> Repository:
        return Repository(
            name=self.name,
            url=self.url,
            scm_provider=provider,
            path=self.full_path or None,
            project_id=self.project_id,
        )


class Capabilities(Additive):
    ADDED: ClassVar[tuple[str, ...]] = ("events", "reviews")

    labels: bool = True
    comments: bool = True
    draft_pull_requests: bool = False
    check_runs: bool = False
    folded_gate_keys: list[str] = Field(
        default_factory=list, description="Gate keys whose result folds in the promoter's statuses."
    )
    events: bool = Field(
        default=False,
        description="(v1.1) The plugin sends events for the repositories of events/subscribe.",
    )
    reviews: bool = Field(
        default=False,
        description="(v1.1) The plugin answers pullRequests/reviews (the approval gate).",
    )


class InitializeParams(Message):
    protocol_versions: list[str] = Field(
        description="Versions the promoter speaks, preferred first."
    )
    provider: str = Field(description="The scmProviders entry this process serves.")
    settings: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict, description="Resolved secrets.")
    state_dir: str = Field(description="A directory the plugin may keep files in.")


class InitializeResult(Message):
    name: str
    version: str
    protocol_version: str
    capabilities: Capabilities = Field(default_factory=Capabilities)


class FindOpenParams(Message):
    repository: RepositoryRef
    head: str
    base: str


class OpenParams(Message):
    repository: RepositoryRef
    head: str
    base: str
    title: str
    body: str
    labels: list[str] = Field(default_factory=list)


class UpdateParams(Message):
    repository: RepositoryRef
    number: int
    title: str
    body: str
    labels: list[str] = Field(default_factory=list)


class MergeParams(Message):
    repository: RepositoryRef
    number: int
    expected_head_sha: str
    message: str


class MergeResult(Message):
    merge_sha: str


class ReviewsParams(Message):
    repository: RepositoryRef
    number: int
    teams: list[str] = Field(
        default_factory=list, description="Teams (or groups) each review's author is checked in."
    )


class CloseParams(Message):
    repository: RepositoryRef
    number: int
    comment: str = ""


class CommentParams(Message):
    repository: RepositoryRef
    number: int
    body: str


class GetStatusesParams(Message):
    repository: RepositoryRef
    sha: str
    keys: list[str] | None = None


class SetStatusParams(Message):
    repository: RepositoryRef
    sha: str
    status: CommitStatus


class GitEnvironmentParams(Message):
    repository: RepositoryRef


class GitEnvironmentResult(Additive):
    ADDED: ClassVar[tuple[str, ...]] = ("expires_at",)

    env: dict[str, str] = Field(default_factory=dict)
    expires_at: datetime | None = Field(
        default=None,
        description="(v1.1) When these credentials stop working; the promoter reuses them "
        "until shortly before. Without it, for a minute.",
    )


class SubscribeParams(Message):
    repositories: list[RepositoryRef] = Field(
        description="(v1.1) The repositories whose events the promoter wants."
    )


class Empty(Message):
    pass


METHODS: dict[str, tuple[type[BaseModel], TypeAdapter[Any]]] = {
    "initialize": (InitializeParams, TypeAdapter(InitializeResult)),
    "shutdown": (Empty, TypeAdapter(None)),
    "pullRequests/findOpen": (FindOpenParams, TypeAdapter(PullRequest | None)),
    "pullRequests/open": (OpenParams, TypeAdapter(PullRequest)),
    "pullRequests/update": (UpdateParams, TypeAdapter(PullRequest)),
    "pullRequests/merge": (MergeParams, TypeAdapter(MergeResult)),
    "pullRequests/close": (CloseParams, TypeAdapter(None)),
    "pullRequests/comment": (CommentParams, TypeAdapter(None)),
    "pullRequests/reviews": (ReviewsParams, TypeAdapter(list[Review])),
    "commitStatuses/get": (GetStatusesParams, TypeAdapter(list[CommitStatus])),
    "commitStatuses/set": (SetStatusParams, TypeAdapter(None)),
    "git/environment": (GitEnvironmentParams, TypeAdapter(GitEnvironmentResult)),
    "events/subscribe": (SubscribeParams, TypeAdapter(None)),
}
"""method -> (parameters model, result adapter)."""


V1_1_MEMBERS: dict[type[BaseModel], tuple[str, ...]] = {PullRequest: ("author",)}
"""Members of the shared models that v1.1 added: never sent to a peer that picked v1."""


def dump(value: Any, *, v1: bool = False) -> Any:
    """A model (or list of models, or None) as wire JSON: camelCase, JSON types; with
    ``v1``, without the members v1.1 added (``V1_1_MEMBERS``)."""
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json", by_alias=True)
        for name in V1_1_MEMBERS.get(type(value), ()) if v1 else ():
            field = type(value).model_fields[name]
            data.pop(field.alias or name, None)
        return data
    if isinstance(value, list):
        return [dump(v, v1=v1) for v in value]
    return value
