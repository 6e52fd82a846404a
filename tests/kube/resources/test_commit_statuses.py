"""CommitStatus objects count as gates, exactly like SCM statuses, and are mirrored to the SCM."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.kube.resources.specs import COMMIT_STATUS_LABEL
from promoter.models import Phase
from tests.kube.cluster import Cluster, fake_cluster, local_objects, wait_until
from tests.kube.test_promotion import ENVS, at, environments


def gate(cluster: Cluster, name: str, sha: str, phase: str, *, labelled: bool = True) -> None:
    spec: dict[str, Any] = {"gitRepositoryRef": {"name": "gitops"}, "sha": sha, "phase": phase}
    if labelled:
        cluster.create("commitstatuses", name, spec, labels={COMMIT_STATUS_LABEL: "ci"})
    else:
        cluster.create("commitstatuses", name, {**spec, "key": "ci"})


def blocked_pr(cluster: Cluster, branch: str) -> dict[str, Any] | None:
    env = environments(cluster).get(branch) or {}
    return env if env.get("pullRequest") and env.get("state") == "blocked" else None


def test_commit_status_objects_gate_promotions_and_are_mirrored_to_the_scm(
    tmp_path: Path,
) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        replica = cluster.replica("a")
        replica.start()
        local_objects(cluster, repo.path, gates=True)
        wait_until(lambda: at(cluster, git(repo.path, "rev-parse", "main")), what="first sync")
        change = repo.change("1.1.0", "Bump guestbook", ENVS)
        dev = wait_until(lambda: blocked_pr(cluster, "environment/dev"), what="a blocked dev PR")
        proposed = dev["proposed"]["hydratedSha"]

        gate(cluster, "dev-ci", proposed, "pending")
        time.sleep(0.5)
        assert environments(cluster)["environment/dev"]["active"]["drySha"] != change
        cluster.kube().custom.patch_namespaced_custom_object(
            "promoter.argoproj.io",
            "v1alpha1",
            "team",
            "commitstatuses",
            "dev-ci",
            [{"op": "replace", "path": "/spec/phase", "value": "success"}],
        )
        staging = wait_until(
            lambda: blocked_pr(cluster, "environment/staging"), what="dev merged, staging blocked"
        )
        gate(cluster, "staging-ci", staging["proposed"]["hydratedSha"], "success", labelled=False)
        wait_until(lambda: at(cluster, change), what="the change promoted to staging")

        local = replica.runtime.plugins["team.local"]
        gitops = replica.runtime.config.repository("team.gitops")
        on_scm = {
            s.key: s.phase for s in local.inner.get_commit_statuses(repo=gitops, sha=proposed)
        }
        assert on_scm.get("ci") is Phase.SUCCESS
        mirrored = wait_until(
            lambda: (
                cluster.status("commitstatuses", "dev-ci").get("mirroredPhase") == "success"
                and cluster.status("commitstatuses", "dev-ci")
            ),
            what="the object to say it was mirrored",
        )
        assert mirrored["observedGeneration"] == 2
        assert mirrored["conditions"][0]["status"] == "True"
