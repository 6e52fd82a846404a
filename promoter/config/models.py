"""The configuration: one YAML file (``promoter.yaml``) loaded into these pydantic models.

The same models are the schema of ``promoter schema`` and, in Kubernetes mode,
of the CRDs. Field names are camelCase in YAML and snake_case in Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PrivateAttr, field_validator, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.gates import GateSpec, merge_gates, unique_keys
from promoter.config.notifications import Notifications
from promoter.config.rollout import BlockedChanges, Tier, Upstream, check_dag
from promoter.config.secrets import SecretRef
from promoter.config.transport import insecure, refusal

# --- SCM providers -------------------------------------------------------------------

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
        if value is not None:
            path = Path(value).expanduser()
            if not path.is_file():
                raise ValueError(f"caBundle {value} is not a file")
            head = path.read_bytes()[:4096]
            if b"-----BEGIN CERTIFICATE-----" not in head:
                raise ValueError(f"caBundle {value} holds no PEM certificate")
        return value


class LocalProvider(Spec):
    """The embedded SCM: pull requests and statuses in the state dir, merges in local git."""

    merge_method: Literal["merge", "squash", "rebase"] = Field(
        default="merge",
        description="How a pull request is merged, as GitHub and GitLab offer it: a merge "
        "commit, one squashed commit, or the head's commits rebased onto the base. Every "
        "method is a three-way merge, refused as not mergeable when it conflicts.",
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


class ScmProvider(Spec):
    """Where an SCM lives and how to log in: exactly one of github, gitlab, local, plugin."""

    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
    github: GitHubProvider | None = None
    gitlab: GitLabProvider | None = None
    local: LocalProvider | None = None
    plugin: ExternalPlugin | None = None

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> ScmProvider:
        kinds = [k for k in ("github", "gitlab", "local", "plugin") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of github, gitlab, local or plugin")
        return self

    @property
    def kind(self) -> str:
        """The plugin name that serves this provider."""
        for kind in ("github", "gitlab", "local"):
            if getattr(self, kind) is not None:
                return kind
        assert self.plugin is not None
        return "plugin"


# --- repositories and strategies -----------------------------------------------------


class Repository(Spec):
    """A git repository and the SCM provider that serves it."""

    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
    url: str = Field(description="Clone URL, or a local path for the local SCM.")
    scm_provider: str = Field(description="Name of an entry of scmProviders.")
    path: str | None = Field(
        default=None,
        description="owner/name on GitHub, group/sub/project on GitLab; derived from url "
        "if omitted.",
    )
    project_id: int | None = Field(default=None, description="GitLab numeric project id.")
    poll_interval: Duration | None = Field(
        default=None,
        description="Poll the remote's refs this often; default: daemon.pollInterval for "
        "local repositories, off for others (they send webhooks).",
    )

    @property
    def full_path(self) -> str:
        """owner/name (GitHub) or group/sub/project (GitLab), from ``path`` or the URL."""
        if self.path:
            return self.path.strip("/")
        url = self.url.rstrip("/")
        url = url.removesuffix(".git")
        if "://" in url:
            url = url.split("://", 1)[1].split("/", 1)[-1]
        elif ":" in url and "@" in url.split(":", 1)[0]:
            url = url.split(":", 1)[1]
        return url.strip("/")


class StatusKey(Spec):
    key: str = Field(min_length=1, description="Commit status context / check name / gate key.")


class AutoRevert(Spec):
    enabled: bool = False
    settle_time: Duration = Field(default=120.0, description="How long a failure must last.")
    auto_merge: bool = False


class Environment(Spec):
    branch: str = Field(min_length=1, description="The active branch, e.g. environment/dev.")
    auto_merge: bool = True
    active_commit_statuses: list[StatusKey] = Field(default_factory=list)
    proposed_commit_statuses: list[StatusKey] = Field(default_factory=list)
    auto_revert: AutoRevert = Field(default_factory=AutoRevert)
    gates: Annotated[list[GateSpec], AfterValidator(unique_keys)] = Field(
        default_factory=list, description="Built-in gates of this environment (docs/gates.md)."
    )
    depends_on: list[str] | None = Field(
        default=None,
        description="Environment branches that must run a change healthy first "
        "(docs/rollouts.md); without it, the environment before in the list.",
    )

    @field_validator("branch")
    @classmethod
    def _branch_name(cls, value: str) -> str:
        if value.startswith("refs/") or " " in value or ".." in value or value.endswith("/"):
            raise ValueError("a branch name like environment/dev, without refs/heads/")
        return value


class PromotionStrategy(Spec):
    """One repository's ordered environments and the gates between them."""

    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
    repository: str = Field(description="Name of an entry of repositories.")
    dry_branch: str = "main"
    proposed_branch_suffix: str = Field(default="-next", min_length=1)
    active_commit_statuses: list[StatusKey] = Field(default_factory=list)
    proposed_commit_statuses: list[StatusKey] = Field(default_factory=list)
    gates: Annotated[list[GateSpec], AfterValidator(unique_keys)] = Field(
        default_factory=list,
        description="Built-in gates of every environment (docs/gates.md); an environment's "
        "own gate of the same name replaces it.",
    )
    environments: list[Environment] = Field(min_length=1)
    tiers: list[Tier] = Field(
        default_factory=list, description="Waves of environments (docs/rollouts.md)."
    )
    blocked_changes: BlockedChanges | None = None
    labels: list[Annotated[str, Field(min_length=1, max_length=50)]] = Field(
        default_factory=list,
        description="Labels on every promotion PR. On GitHub a PR with labels costs one "
        "more API call (GitHub cannot label a pull request when opening it).",
    )

    @model_validator(mode="after")
    def _a_dag(self) -> PromotionStrategy:
        branches = [e.branch for e in self.environments]
        twice = sorted({b for b in branches if branches.count(b) > 1})
        if twice:
            raise ValueError(f"environment branch {twice[0]!r} appears twice")
        tiered = [b for t in self.tiers for b in t.environments]
        if self.tiers:
            if sorted(tiered) != sorted(branches):
                missing = sorted(set(branches) - set(tiered))
                extra = sorted(set(tiered) - set(branches))
                twice = sorted({b for b in tiered if tiered.count(b) > 1})
                parts = [f"not in a tier: {', '.join(missing)}"] if missing else []
                parts += [f"unknown: {', '.join(extra)}"] if extra else []
                parts += [f"in two tiers: {', '.join(twice)}"] if twice else []
                raise ValueError("tiers must list every environment once; " + "; ".join(parts))
            if any(e.depends_on is not None for e in self.environments):
                raise ValueError("give tiers or dependsOn, not both")
        names = {t.name for t in self.tiers}
        if self.blocked_changes is not None and self.blocked_changes.from_tier not in names:
            raise ValueError(
                f"blockedChanges.fromTier names no tier ({', '.join(names) or 'none'})"
            )
        problems = check_dag(self.upstreams())
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def upstreams(self) -> dict[str, list[Upstream]]:
        """Each environment branch's upstream groups (the DAG, tiers expanded)."""
        if self.tiers:
            graph: dict[str, list[Upstream]] = {}
            for before, tier in zip([None, *self.tiers], self.tiers, strict=False):
                groups = [Upstream(tuple(before.environments), before.required())] if before else []
                graph.update({branch: list(groups) for branch in tier.environments})
            return graph
        graph = {}
        for index, env in enumerate(self.environments):
            if env.depends_on is not None:
                graph[env.branch] = (
                    [Upstream(tuple(env.depends_on), len(env.depends_on))] if env.depends_on else []
                )
            else:
                previous = self.environments[index - 1].branch if index else None
                graph[env.branch] = [Upstream((previous,), 1)] if previous else []
        return graph

    def tier_of(self, env: Environment) -> Tier | None:
        return next((t for t in self.tiers if env.branch in t.environments), None)

    def proposed_branch(self, env: Environment) -> str:
        return env.branch + self.proposed_branch_suffix

    def active_keys(self, env: Environment) -> list[str]:
        """Keys that must be success on the environment's active hydrated commit."""
        return _merge_keys(self.active_commit_statuses, env.active_commit_statuses)

    def proposed_keys(self, env: Environment) -> list[str]:
        """Keys that must be success on the proposed hydrated commit."""
        return _merge_keys(self.proposed_commit_statuses, env.proposed_commit_statuses)

    def gates_of(self, env: Environment) -> list[GateSpec]:
        """The built-in gates of ``env``: the strategy's, then its own (same name: its own)."""
        return merge_gates(self.gates, env.gates)


def _merge_keys(*lists: list[StatusKey]) -> list[str]:
    seen: dict[str, None] = {}
    for items in lists:
        for item in items:
            seen.setdefault(item.key, None)
    return list(seen)


# --- daemon and webhooks ---------------------------------------------------------------


class GitHubWebhook(Spec):
    secrets: list[SecretRef] = Field(
        default_factory=list, description="Accepted secrets; several at once while rotating."
    )


class GitLabWebhook(Spec):
    tokens: list[SecretRef] = Field(
        default_factory=list, description="Accepted X-Gitlab-Token values."
    )
    signing_secrets: list[SecretRef] = Field(
        default_factory=list, description="whsec_ signing secrets for webhook-signature."
    )


class ForgejoWebhook(Spec):
    secrets: list[SecretRef] = Field(
        default_factory=list, description="HMAC secrets of X-Forgejo/X-Gitea-Signature."
    )


class Webhooks(Spec):
    github: GitHubWebhook = Field(default_factory=GitHubWebhook)
    gitlab: GitLabWebhook = Field(default_factory=GitLabWebhook)
    forgejo: ForgejoWebhook = Field(default_factory=ForgejoWebhook)
    max_body_bytes: int = Field(default=5 * 1024 * 1024, gt=0)
    delivery_retention: Duration = Field(default=2 * 86400.0, description="Keep delivery ids.")


class Daemon(Spec):
    state_dir: str = Field(default=".promoter", description="Mirrors, cache and local SCM data.")
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    public_url: str | None = Field(
        default=None, description="URL people reach the daemon at, for links in status checks."
    )
    resync_interval: Duration = Field(default=300.0, description="Full resync of every strategy.")
    poll_interval: Duration = Field(default=3.0, description="Ref polling of local repositories.")
    status_cache_ttl: Duration = Field(default=60.0, description="Trust cached statuses this long.")
    settled_recheck: Duration = Field(
        default=3600.0,
        description=(
            "Read the statuses of settled commits (merged, recorded healthy, nothing"
            " waiting on them) and their environments' pull requests again at least this"
            " often: the periodic resync re-reads a share of them each time; so is what a"
            " strategy waits for while its repository's webhooks flow. A lost webhook is"
            " healed within it plus one resyncInterval (two resyncIntervals while the"
            " repository's webhooks are silent)."
        ),
    )
    workers: int = Field(default=4, ge=1, le=64)
    max_backoff: Duration = Field(default=300.0, description="Cap of the retry backoff.")
    api_token: SecretRef | None = Field(
        default=None, description="Bearer token for write calls to /api/v1 when not on loopback."
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class Config(Spec):
    """The whole of promoter.yaml."""

    _indexes: dict[str, tuple[list[Any], int, dict[str, Any]]] = PrivateAttr(default_factory=dict)

    scm_providers: list[ScmProvider] = Field(default_factory=list)
    repositories: list[Repository] = Field(default_factory=list)
    promotion_strategies: list[PromotionStrategy] = Field(default_factory=list)
    webhooks: Webhooks = Field(default_factory=Webhooks)
    daemon: Daemon = Field(default_factory=Daemon)
    notifications: Notifications = Field(default_factory=Notifications)

    def provider(self, name: str) -> ScmProvider:
        return next(p for p in self.scm_providers if p.name == name)

    def repository(self, name: str) -> Repository:
        found: Repository | None = self._named("repositories").get(name)
        if found is None:
            raise KeyError(f"no repository named {name!r}")
        return found

    def strategy(self, name: str) -> PromotionStrategy | None:
        found: PromotionStrategy | None = self._named("promotion_strategies").get(name)
        return found

    def _named(self, field: str) -> dict[str, Any]:
        """The items of list ``field`` by name, built once (10,000 strategies: no linear
        search per reconcile); built again for another list (``model_copy`` shares
        private attributes between copies) or one that changed length."""
        items: list[Any] = getattr(self, field)
        index = self._indexes.get(field)
        if index is None or index[0] is not items or index[1] != len(items):
            named: dict[str, Any] = {}
            for item in items:
                named.setdefault(item.name, item)  # the first of a name, as next() found
            index = (items, len(items), named)
            self._indexes[field] = index
        return index[2]

    def state_path(self) -> Path:
        return Path(self.daemon.state_dir).expanduser()
