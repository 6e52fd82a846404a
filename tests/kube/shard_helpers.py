"""Set-up for the sharded tests: several repositories, one strategy each, and what to check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.kube.controller import Controller
from tests.kube.cluster import NS, Cluster

ENVS = ["environment/dev", "environment/staging"]


def fleet(cluster: Cluster, root: Path, count: int) -> dict[str, GitOpsRepo]:
    """``count`` repositories ``repo-N``, each with the strategy ``app-N``, on the local SCM."""
    cluster.create("scmproviders", "local", {"local": {}})
    repos: dict[str, GitOpsRepo] = {}
    for n in range(count):
        repo = GitOpsRepo.create(root / f"r{n}", ENVS)
        repos[f"app-{n}"] = repo
        cluster.create(
            "gitrepositories",
            f"repo-{n}",
            {"url": str(repo.path), "scmProviderRef": {"name": "local"}},
        )
        cluster.create(
            "promotionstrategies",
            f"app-{n}",
            {
                "gitRepositoryRef": {"name": f"repo-{n}"},
                "environments": [{"branch": b} for b in ENVS],
            },
        )
    return repos


def promoted(cluster: Cluster, strategy: str, dry_sha: str) -> bool:
    """Every environment of ``strategy`` runs ``dry_sha``, as its status says."""
    envs = cluster.status("promotionstrategies", strategy).get("environments") or []
    return len(envs) == len(ENVS) and all(
        (e.get("active") or {}).get("drySha") == dry_sha and e.get("state") == "up-to-date"
        for e in envs
    )


def all_promoted(cluster: Cluster, changes: dict[str, str]) -> bool:
    return all(promoted(cluster, name, sha) for name, sha in changes.items())


def merges(repo: GitOpsRepo) -> dict[str, int]:
    return {b: len(git(repo.path, "rev-list", "--merges", b).split()) for b in ENVS}


def holders(cluster: Cluster) -> dict[str, str]:
    """Shard -> holder, as the Leases in the API server say (``kubectl get leases``)."""
    found = {}
    for lease in cluster.fake.items("leases"):
        labels = lease["metadata"].get("labels") or {}
        if labels.get("promoter.argoproj.io/lease-role") == "shard":
            shard = lease["metadata"]["name"].removeprefix("promoter-")
            found[shard] = (lease.get("spec") or {}).get("holderIdentity") or ""
    return found


def leased(cluster: Cluster, replicas: list[Controller]) -> bool:
    """Every shard with work has its Lease held by the replica every live replica assigns
    it to (the API server's view: what another replica sees)."""
    tables = [r.sharding.coordinator.table for r in replicas if r.sharding is not None]
    if not tables or any(not t.work.weights for t in tables):
        return False
    names = {r.settings.identity for r in replicas}
    leases = holders(cluster)
    first = tables[0]
    return all(
        set(t.members) == names
        and t.assigned == first.assigned
        and all(leases.get(s) == m for s, m in t.assigned.items())
        for t in tables
    )


def settled(cluster: Cluster, replicas: list[Controller]) -> bool:
    """``leased``, and each replica counts among the shards it holds those its Leases name
    (it does so a moment after its Lease write has landed)."""
    if not leased(cluster, replicas):
        return False
    assigned = next(r.sharding for r in replicas if r.sharding is not None).coordinator.table
    return all(
        r.sharding.coordinator.held()
        == {s for s, m in assigned.assigned.items() if m == r.settings.identity}
        for r in replicas
        if r.sharding is not None
    )


def owner_of(replicas: list[Controller], strategy: str) -> Controller | None:
    """The replica whose held shards include the strategy's repository."""
    for replica in replicas:
        sharding = replica.sharding
        repo = replica.runtime.config.strategy(f"{NS}.{strategy}")
        if sharding and repo and sharding.shard_of(repo.repository) in sharding.coordinator.held():
            return replica
    return None


def table(replica: Controller) -> dict[str, Any]:
    assert replica.sharding is not None
    return {"members": sorted(replica.sharding.coordinator.table.members)}
