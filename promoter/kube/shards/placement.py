"""Where the configuration's work lies in shards: each repository's shard, each shard's
weight (its strategies) and repositories, each strategy's repository.

Worked out again only when the configuration is another object (a change of the custom
resources builds a new one). The index is replaced whole, never changed: the threads
that read it (the Lease loop, the workers, the HTTP routes) need no lock.

Budgets: every replica keeps its own limiter per credential (``scm_plugins.budget``);
each gets the share of the credential's limits that its held shards weigh among all
the shards using that credential, re-split whenever shards move (``budget_shares``).
Held shards are disjoint, so the shares never add up to more than the whole (plus
``MIN_SHARE`` for a replica holding none, which only answers API writes; a credential
no strategy uses is split evenly).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from promoter.config import Config
from promoter.kube.shards.assignment import Work, shard_name, shard_of

MIN_SHARE = 0.01


@dataclass(frozen=True)
class Index:
    config: Config
    work: Work
    repository_of: dict[str, str]
    """Strategy -> its repository."""


class Placement:
    """``config()``: the configuration of the moment; ``count``: the number of shards."""

    def __init__(self, count: int, *, config: Callable[[], Config]) -> None:
        self.count = count
        self._config = config
        self._index: Index | None = None

    def shard_of(self, repository: str) -> str:
        return shard_name(shard_of(repository, self.count))

    def index(self) -> Index:
        config = self._config()
        index = self._index
        if index is not None and index.config is config:
            return index
        weights: dict[str, float] = {}
        repositories: dict[str, list[str]] = {}
        for repo in config.repositories:
            repositories.setdefault(self.shard_of(repo.name), []).append(repo.name)
        repository_of = {}
        for strategy in config.promotion_strategies:
            repository_of[strategy.name] = strategy.repository
            shard = self.shard_of(strategy.repository)
            weights[shard] = weights.get(shard, 0.0) + 1.0
        index = Index(config, Work(weights, repositories), repository_of)
        self._index = index
        return index

    def work(self) -> Work:
        return self.index().work

    def repository_of(self, key: str) -> str | None:
        """The repository of strategy ``key``; None when no such strategy is configured."""
        return self.index().repository_of.get(key)

    def repositories(self, shards: Collection[str]) -> set[str]:
        """The repositories of ``shards``."""
        work = self.index().work
        return {repo for shard in shards for repo in work.repositories.get(shard, [])}

    def of_shards(self, keys: list[str], shards: Collection[str]) -> list[str]:
        """Of strategy ``keys``, in their order, those whose repository is in ``shards``."""
        repository_of = self.index().repository_of
        return [
            key
            for key in keys
            if key in repository_of and self.shard_of(repository_of[key]) in shards
        ]

    def budget_shares(self, held: Collection[str], members: int) -> dict[str, float]:
        """Provider -> the share of its credential's limits a replica holding ``held``
        may spend, among ``members`` live replicas."""
        index = self.index()
        provider_of = {r.name: r.scm_provider for r in index.config.repositories}
        total: dict[str, float] = {}
        ours: dict[str, float] = {}
        for repo in index.repository_of.values():
            provider = provider_of.get(repo)
            if provider is None:
                continue
            total[provider] = total.get(provider, 0.0) + 1.0
            if self.shard_of(repo) in held:
                ours[provider] = ours.get(provider, 0.0) + 1.0
        even = 1.0 / max(1, members)
        return {
            p.name: max(MIN_SHARE, ours.get(p.name, 0.0) / total[p.name])
            if total.get(p.name)
            else even
            for p in index.config.scm_providers
        }
