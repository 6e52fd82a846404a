"""A PromotionStrategy deleted from the cluster takes its metric series with it: a daemon
whose strategies come and go (one per preview environment) does not export them until it
restarts. The other strategies' series stay as they were."""

from __future__ import annotations

from pathlib import Path

from promoter.cli.sandbox import GitOpsRepo
from promoter.kube.client.group import GROUP
from promoter.metrics import (
    DORA_DEPLOYMENTS_TOTAL,
    PROMOTIONS_TOTAL,
    REGISTRY,
    REVERTS_TOTAL,
    held_gauge,
)
from tests.kube.cluster import NS, fake_cluster, wait_until

ENVS = ["environment/dev", "environment/staging"]
GONE, KEPT = "metrics-gone", "metrics-kept"
"""Names no other test gives a strategy: the registry is the process's."""
RECORDED = "environment/qa"
"""The environment the series are recorded for: not one of the strategies' own, so that
their reconciles (which set ``promoter_holds`` of their environments from the ledger)
never touch them."""


def series(name: str, strategy: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(
        name, {"strategy": f"{NS}.{strategy}", "environment": RECORDED, **labels}
    )


def test_a_deleted_strategys_series_go_and_the_others_stay(tmp_path: Path) -> None:
    repo = GitOpsRepo.create(tmp_path / "gitops", ENVS)
    with fake_cluster(tmp_path) as cluster:
        replica = cluster.replica("a")
        replica.start()
        cluster.create("scmproviders", "local", {"local": {}})
        cluster.create(
            "gitrepositories",
            "gitops",
            {"url": str(repo.path), "scmProviderRef": {"name": "local"}},
        )
        for name in (GONE, KEPT):
            spec = {
                "gitRepositoryRef": {"name": "gitops"},
                "environments": [{"branch": b} for b in ENVS],
            }
            cluster.create("promotionstrategies", name, spec)
        wait_until(
            lambda: all(replica.runtime.config.strategy(f"{NS}.{n}") for n in (GONE, KEPT)),
            what="both strategies in the configuration",
        )
        for name in (GONE, KEPT):  # as the daemon records a promotion, a revert and a hold
            PROMOTIONS_TOTAL.inc(f"{NS}.{name}", RECORDED)
            DORA_DEPLOYMENTS_TOTAL.inc(f"{NS}.{name}", RECORDED)
            REVERTS_TOTAL.inc(f"{NS}.{name}", RECORDED, "auto")
            held_gauge(f"{NS}.{name}", RECORDED, 2)

        cluster.kube().custom.delete_namespaced_custom_object(
            GROUP, "v1alpha1", NS, "promotionstrategies", GONE
        )
        wait_until(
            lambda: (
                replica.runtime.config.strategy(f"{NS}.{GONE}") is None
                and series("promoter_promotions_total", GONE) is None
            ),
            what="the deleted strategy out of the configuration, and its series gone",
        )
        assert series("promoter_dora_deployments_total", GONE) is None
        assert series("promoter_reverts_total", GONE, trigger="auto") is None
        assert series("promoter_holds", GONE) is None
        assert series("promoter_promotions_total", KEPT) == 1.0
        assert series("promoter_dora_deployments_total", KEPT) == 1.0
        assert series("promoter_reverts_total", KEPT, trigger="auto") == 1.0
        assert series("promoter_holds", KEPT) == 2.0
