"""Invalid custom resources get Ready=False with the validation message; the rest runs on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promoter.cli.sandbox import GitOpsRepo
from tests.kube.cluster import Cluster, fake_cluster, local_objects, wait_until
from tests.kube.test_promotion import ENVS


def ready(cluster: Cluster, plural: str, name: str) -> dict[str, Any] | None:
    status = cluster.status(plural, name)
    return next((c for c in status.get("conditions", []) if c["type"] == "Ready"), None)


def not_ready(cluster: Cluster, plural: str, name: str) -> dict[str, Any] | None:
    condition = ready(cluster, plural, name)
    return condition if condition and condition["status"] == "False" else None


def test_invalid_objects_get_ready_false_with_the_message_and_valid_ones_still_run(
    tmp_path: Path,
) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        replica = cluster.replica("a")
        replica.start()
        local_objects(cluster, repo.path)
        dev = {"branch": "environment/dev"}
        cluster.create(
            "promotionstrategies",
            "twice",
            {"gitRepositoryRef": {"name": "gitops"}, "environments": [dev, dev]},
        )
        cluster.create(
            "promotionstrategies",
            "refs",
            {"gitRepositoryRef": {"name": "gitops"}, "environments": [{"branch": "refs/heads/x"}]},
        )
        cluster.create(
            "promotionstrategies",
            "orphan",
            {"gitRepositoryRef": {"name": "nowhere"}, "environments": [dev]},
        )
        cluster.create(
            "gitrepositories", "lost", {"url": "/nowhere", "scmProviderRef": {"name": "missing"}}
        )
        cluster.create("scmproviders", "two-kinds", {"local": {}, "gitlab": {}})
        cluster.create(
            "commitstatuses",
            "bad-sha",
            {"gitRepositoryRef": {"name": "gitops"}, "sha": "abc", "phase": "success", "key": "ci"},
        )

        twice = wait_until(lambda: not_ready(cluster, "promotionstrategies", "twice"), what="twice")
        assert twice["reason"] == "InvalidSpec"
        assert "environment branch 'environment/dev' appears twice" in twice["message"]
        refs = wait_until(lambda: not_ready(cluster, "promotionstrategies", "refs"), what="refs")
        assert "a branch name like environment/dev" in refs["message"]
        orphan = wait_until(lambda: not_ready(cluster, "promotionstrategies", "orphan"), what="ref")
        assert orphan["message"] == "GitRepository nowhere is missing or invalid"
        lost = wait_until(lambda: not_ready(cluster, "gitrepositories", "lost"), what="lost")
        assert lost["message"] == "ScmProvider missing is missing or invalid"
        kinds = wait_until(lambda: not_ready(cluster, "scmproviders", "two-kinds"), what="kinds")
        assert "give exactly one of github, gitlab, local or plugin" in kinds["message"]
        sha = wait_until(lambda: not_ready(cluster, "commitstatuses", "bad-sha"), what="bad sha")
        assert "sha" in sha["message"]

        good = wait_until(
            lambda: (
                (c := ready(cluster, "promotionstrategies", "guestbook")) and c["status"] == "True"
            ),
            what="the valid strategy to be reconciled",
        )
        assert good
        assert replica.elector.is_leader() and replica._thread.is_alive()
        names = [s.name for s in replica.runtime.config.promotion_strategies]
        assert names == ["team.guestbook"]

        cluster.patch_spec(
            "promotionstrategies",
            "twice",
            {"gitRepositoryRef": {"name": "gitops"}, "environments": [dev]},
        )
        fixed = wait_until(
            lambda: (
                (c := ready(cluster, "promotionstrategies", "twice"))
                and c["status"] == "True"
                and c
            ),
            what="the fixed strategy to be ready",
        )
        assert fixed["observedGeneration"] == 2
