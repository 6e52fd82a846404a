"""The repositories of promoter.yaml and the promotion strategies over them: each
strategy's ordered environments, the statuses and gates between them, its rollout shape."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.freezes import FreezeWindow
from promoter.config.gates import GateSpec, merge_gates, unique_keys
from promoter.config.names import short_name
from promoter.config.rollout import BlockedChanges, Tier, Upstream, check_dag


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


class Deployments(Spec):
    """Report each promotion as a deployment to the environment on the SCM (docs/deployments.md)."""

    enabled: bool = True
    environment: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="The SCM environment's name; default: the branch's last part (prod).",
    )
    url: str | None = Field(default=None, description="Where the environment is reached.")


class Reviewers(Spec):
    """Reviewers requested on each promotion PR of an environment, once per PR."""

    users: list[str] = Field(default_factory=list, description="User names (logins).")
    teams: list[str] = Field(
        default_factory=list,
        description="GitHub teams (org/slug, or a slug of the repository's owner); GitLab "
        "groups (their members are requested).",
    )
    codeowners: bool = Field(
        default=False,
        description="Also the owners, by the active branch's CODEOWNERS, of what the "
        "promotion changes.",
    )


class Environment(Spec):
    branch: str = Field(min_length=1, description="The active branch, e.g. environment/dev.")
    auto_merge: bool = True
    active_commit_statuses: list[StatusKey] = Field(default_factory=list)
    proposed_commit_statuses: list[StatusKey] = Field(default_factory=list)
    auto_revert: AutoRevert = Field(default_factory=AutoRevert)
    gates: Annotated[list[GateSpec], AfterValidator(unique_keys)] = Field(
        default_factory=list, description="Built-in gates of this environment (docs/gates.md)."
    )
    merge_queue: bool | None = Field(
        default=None,
        description="The branch merges through a queue (GitHub's merge queue, GitLab's merge "
        "trains): promotion PRs are enqueued instead of merged (docs/merge-queues.md). "
        "Unset: as the SCM says (a merge_queue rule on the branch, merge trains on).",
    )
    reviewers: Reviewers | None = Field(
        default=None, description="Reviewers requested on each promotion PR (once per PR)."
    )
    deployments: Deployments | None = Field(
        default=None, description="SCM deployments of this environment (the strategy's when unset)."
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
    deployments: Deployments | None = Field(
        default=None,
        description="Report promotions as SCM deployments, in every environment "
        "(docs/deployments.md); off by default: each costs SCM calls.",
    )
    freezes: list[FreezeWindow] = Field(
        default_factory=list,
        description="Freeze dates or ranges of this strategy (docs/freezes.md).",
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

    def deployment_of(self, env: Environment) -> tuple[str, str] | None:
        """The SCM environment name and URL ``env`` deploys as, or None when off."""
        spec = env.deployments or self.deployments
        if spec is None or not spec.enabled:
            return None
        return (spec.environment or short_name(env.branch), spec.url or "")

    def gates_of(self, env: Environment) -> list[GateSpec]:
        """The built-in gates of ``env``: the strategy's, then its own (same name: its own)."""
        return merge_gates(self.gates, env.gates)


def _merge_keys(*lists: list[StatusKey]) -> list[str]:
    seen: dict[str, None] = {}
    for items in lists:
        for item in items:
            seen.setdefault(item.key, None)
    return list(seen)
