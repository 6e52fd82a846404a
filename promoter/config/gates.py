"""Built-in gates (DESIGN rule 5) as configured under ``gates:`` of a strategy or environment.

Each entry names exactly one kind: ``soak``, ``window``, ``approval``, ``http``,
``commitMessage``, ``argocd``, ``flux`` or ``signedCommits``. Its result shows on the PR
as the commit status ``promoter/<name>`` (the name defaults to the kind).
"""

from __future__ import annotations

import re
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.secrets import SecretRef

GATE_KINDS = (
    "soak",
    "window",
    "approval",
    "http",
    "commit_message",
    "argocd",
    "flux",
    "signed_commits",
)
ACTIVE_KINDS = frozenset({"argocd", "flux"})
"""Kinds that judge an environment's running commit (health), not the proposed change."""
TIMEOUT = "Time limit of one check, its whole answer included; then it is pending."


class Soak(Spec):
    """The previous environment ran this dry commit, healthy, for at least ``duration``."""

    duration: Duration = Field(description="How long, e.g. 30m or 2h.")


class Window(Spec):
    """A time window: starts at each time ``cron`` or ``rrule`` names, lasts ``duration``."""

    cron: str | None = Field(default=None, description="Five-field cron: minute hour dom mon dow.")
    rrule: str | None = Field(
        default=None, description="An RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=MO;BYHOUR=9."
    )
    duration: Duration = Field(description="How long the window stays open after each start.")

    @model_validator(mode="after")
    def _one_schedule(self) -> Window:
        if (self.cron is None) == (self.rrule is None):
            raise ValueError("give exactly one of cron or rrule")
        if self.duration <= 0:
            raise ValueError("a window needs a positive duration")
        from promoter.config.schedules import validate_schedule

        validate_schedule(cron=self.cron, rrule=self.rrule)
        return self


class Windows(Spec):
    """Promotion windows: open when inside an ``allow`` window (or there are none), and in
    no ``deny`` window. Deny wins."""

    time_zone: str = Field(default="UTC", description="IANA time zone, e.g. Europe/Berlin.")
    allow: list[Window] = Field(default_factory=list)
    deny: list[Window] = Field(default_factory=list)

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value


class Approval(Spec):
    """Approving reviews on the PR (GitHub reviews, GitLab approvals, `promoter approve`)."""

    count: int = Field(default=1, ge=1, description="How many distinct approvers.")
    timeout: Duration = Field(
        default=10.0, description="Time limit of the SCM read of the PR's reviews."
    )
    users: list[str] = Field(default_factory=list, description="Only these users count.")
    teams: list[str] = Field(
        default_factory=list, description="Only members of these teams / groups count."
    )
    label: str | None = Field(default=None, description="A PR label that approves by itself.")
    reset_on_push: bool = Field(
        default=False, description="An approval counts only for the head it was given on."
    )
    exclude_change_authors: bool = Field(
        default=True,
        description="Approvals by the authors (and co-authors) of the dry commits being "
        "promoted do not count; the PR's author never counts.",
    )


class HttpCheck(Spec):
    """An HTTP endpoint that judges the proposed change, polled while the gate matters."""

    url: str = Field(description="What to call; {sha}, {drySha}, {environment} are filled in.")
    method: Literal["GET", "POST"] = "GET"
    headers: dict[str, SecretRef] = Field(default_factory=dict)
    body: str | None = None
    success_status: list[int] = Field(default_factory=lambda: [200])
    expression: str | None = Field(
        default=None, description="JMESPath over the JSON answer; truthy means success."
    )
    interval: Duration = Field(default=30.0, description="How often to ask again.")
    timeout: Duration = Field(default=10.0, description=TIMEOUT)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not re.match(r"^https?://", value):
            raise ValueError("an http:// or https:// URL")
        return value

    @field_validator("expression")
    @classmethod
    def _jmespath(cls, value: str | None) -> str | None:
        return _valid_jmespath(value)


class CommitMessage(Spec):
    """Rules over each dry commit being promoted (subject, body, author and trailers)."""

    block_trailers: list[str] = Field(
        default_factory=list, description="A commit with any of these trailers blocks."
    )
    require_trailers: list[str] = Field(
        default_factory=list, description="Every commit must carry each of these trailers."
    )
    block_if: str | None = Field(
        default=None,
        description="JMESPath over {subject, body, author, trailers}: truthy blocks.",
    )

    @field_validator("block_if")
    @classmethod
    def _jmespath(cls, value: str | None) -> str | None:
        return _valid_jmespath(value)


class ArgoCd(Spec):
    """Argo CD Applications that deploy the environment's branch must be Synced and Healthy."""

    server: str = Field(description="Argo CD's URL, e.g. https://argocd.example.com.")
    token: SecretRef
    selector: str | None = Field(default=None, description="Label selector of Applications.")
    applications: list[str] = Field(default_factory=list, description="Or Application names.")
    timeout: Duration = Field(default=10.0, description=TIMEOUT)
    interval: Duration = Field(default=30.0, description="How often to look again.")


class Flux(Spec):
    """Flux Kustomizations / HelmReleases that applied the environment's commit, Ready."""

    namespace: str = "flux-system"
    kustomizations: list[str] = Field(default_factory=list)
    helm_releases: list[str] = Field(default_factory=list)
    interval: Duration = Field(default=30.0, description="How often to look again.")
    timeout: Duration = Field(default=10.0, description=TIMEOUT)


class SignedCommits(Spec):
    """Every dry commit being promoted carries a valid signature by an allowed signer."""

    allowed_signers: SecretRef | None = Field(
        default=None,
        description="SSH signers: an allowed_signers file (git's gpg.ssh.allowedSignersFile).",
    )
    keyring: SecretRef | None = Field(
        default=None, description="OpenPGP signers: their public keys, ASCII-armoured."
    )
    scm_verification: bool = Field(
        default=False, description="Also require the SCM's own verdict that it is verified."
    )

    @model_validator(mode="after")
    def _some_signer(self) -> SignedCommits:
        if self.allowed_signers is None and self.keyring is None:
            raise ValueError("give allowedSigners (SSH), keyring (OpenPGP), or both")
        return self


class GateSpec(Spec):
    """One built-in gate: exactly one kind, and an optional name (default: the kind)."""

    name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    soak: Soak | None = None
    window: Windows | None = None
    approval: Approval | None = None
    http: HttpCheck | None = None
    commit_message: CommitMessage | None = None
    argocd: ArgoCd | None = None
    flux: Flux | None = None
    signed_commits: SignedCommits | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> GateSpec:
        kinds = [k for k in GATE_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"give exactly one of {', '.join(_camel(k) for k in GATE_KINDS)}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in GATE_KINDS if getattr(self, k) is not None)

    @property
    def key(self) -> str:
        """The commit status the gate's result shows as: ``promoter/<name>``."""
        return f"promoter/{self.name or self.kind.replace('_', '-')}"

    @property
    def active(self) -> bool:
        """Whether it judges the running commit (health) rather than the proposed change."""
        return self.kind in ACTIVE_KINDS


def unique_keys(gates: list[GateSpec]) -> list[GateSpec]:
    """``gates`` unchanged, or ``ValueError`` when two of them would share a check."""
    seen: set[str] = set()
    for gate in gates:
        if gate.key in seen:
            raise ValueError(f"two gates show as {gate.key}: give one of them another name")
        seen.add(gate.key)
    return gates


def merge_gates(strategy: list[GateSpec], environment: list[GateSpec]) -> list[GateSpec]:
    """The strategy's gates then the environment's; a gate of the same key is replaced."""
    merged = {g.key: g for g in strategy}
    merged.update({g.key: g for g in environment})
    return list(merged.values())


def _valid_jmespath(value: str | None) -> str | None:
    if value is not None:
        import jmespath
        from jmespath.exceptions import JMESPathError

        try:
            jmespath.compile(value)
        except JMESPathError as exc:
            raise ValueError(f"not a JMESPath expression: {exc}") from exc
    return value


def _camel(kind: str) -> str:
    head, *rest = kind.split("_")
    return head + "".join(part.title() for part in rest)
