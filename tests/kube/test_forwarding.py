"""Every replica serves webhooks: a non-leader records the refresh on the strategy
(annotation ``promoter.argoproj.io/refreshedAt``) and the leader's watch acts on it."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from promoter.cli.hydrate import hydrate
from promoter.cli.sandbox import GitOpsRepo, commit_files, init_bare
from promoter.config import Config
from promoter.kube.app import ReplicaApp
from promoter.kube.resources.specs import REFRESH_ANNOTATION
from promoter.kube.shards.mode import ShardedMode
from tests.kube.cluster import NS, Cluster, fake_cluster, local_objects, wait_until
from tests.kube.shard_helpers import fleet
from tests.webhooks.helpers import GITHUB_FIXTURES, TestClient
from webhooks.verify import GitHubSignature

SECRET = "kube-webhook-secret"
PUSH = GITHUB_FIXTURES / "push" / "with-new-branch.payload.json"  # refs/heads/master


def dev_dry(cluster: Cluster) -> str | None:
    status = cluster.status("promotionstrategies", "hello-app")
    envs = status.get("environments") or [{}]
    return (envs[0].get("active") or {}).get("drySha")


def github_objects(cluster: Cluster, repo: Path) -> None:
    """A GitHub provider (its token from a Secret) for the genuine payload's repository."""
    cluster.secret("github-token", {"token": "t0ken"})
    cluster.create("scmproviders", "github", {"secretRef": {"name": "github-token"}, "github": {}})
    cluster.create(
        "gitrepositories",
        "hello",
        {"url": str(repo), "path": "Codertocat/Hello-World", "scmProviderRef": {"name": "github"}},
    )
    cluster.create(
        "promotionstrategies",
        "hello-app",
        {
            "gitRepositoryRef": {"name": "hello"},
            "dryBranch": "master",
            "environments": [{"branch": "environment/dev"}],
        },
    )


def new_dry_commit(repo: Path, version: str) -> str:
    sha = commit_files(repo, "master", {"app/values.yaml": f"v: {version}\n"}, f"v{version}")
    hydrate(repo=repo, dry_ref="master", branches=["environment/dev"])
    return sha


def test_a_webhook_to_a_non_leader_reaches_the_leader_through_the_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T_KUBE_GH_SECRET", SECRET)
    base = Config.model_validate(
        {"webhooks": {"github": {"secrets": [{"fromEnv": "T_KUBE_GH_SECRET"}]}}}
    )
    repo = init_bare(tmp_path / "hello.git", initial_branch="master")
    first = new_dry_commit(repo, "1")
    with fake_cluster(tmp_path) as cluster:
        # Leases a busy test machine cannot lose: the webhook must reach the follower,
        # not a replica that became the leader meanwhile.
        steady = {"lease_duration": 10.0, "renew_deadline": 6.0}
        leader, follower = (
            cluster.replica("a", base=base, **steady),
            cluster.replica("b", base=base, **steady),
        )
        leader.start()
        wait_until(leader.leading, what="a to lead")
        follower.start()
        github_objects(cluster, repo)
        wait_until(lambda: dev_dry(cluster) == first, what="dev at the first commit")
        assert (repo / "refs" / "heads").exists()
        assert leader.runtime.config.provider("team.github").github is not None
        change = new_dry_commit(repo, "2")  # no poll for GitHub: only a webhook tells

        body = PUSH.read_bytes()
        client = TestClient(ReplicaApp(follower))
        answer = client.post(
            "/webhooks/github",
            content=body,
            headers={
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "Content-Type": "application/json",
                "X-Hub-Signature-256": GitHubSignature.sign(SECRET, body),
            },
        )
        assert answer.status_code == 202, answer.text
        annotated = wait_until(
            lambda: (
                (cluster.fake.get("promotionstrategies", NS, "hello-app") or {})
                .get("metadata", {})
                .get("annotations", {})
                .get(REFRESH_ANNOTATION)
            ),
            what="the refresh annotation",
        )
        assert annotated.endswith("Z")
        wait_until(lambda: dev_dry(cluster) == change, what="the leader to promote the change")
        assert follower.forwarder.forwarded == 1
        assert not follower.runtime.started


def test_readyz_is_ready_on_every_replica_and_says_which_one_leads(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = cluster.replica("a"), cluster.replica("b")
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        wait_until(b.ready, what="b to list everything and build its configuration")
        answers: dict[str, Any] = {}
        for name, replica in (("a", a), ("b", b)):
            response = TestClient(ReplicaApp(replica)).get("/readyz")
            assert response.status_code == 200
            answers[name] = (
                json.loads(response.text)["leader"],
                response.headers["x-promoter-leader"],
            )
        assert answers == {"a": (True, "true"), "b": (False, "false")}


def test_a_replica_that_listed_everything_is_not_ready_before_its_configuration_is_built(
    tmp_path: Path,
) -> None:
    """Between its listing and its configuration a replica knows no strategy: a request
    sent to it then was answered 404 (seen in a rolling restart); it is not ready yet."""
    with fake_cluster(tmp_path) as cluster:
        a = cluster.replica("a")
        for watcher in a.watchers.values():
            watcher.synced.set()  # listed; its controller has not run a step yet
        client = TestClient(ReplicaApp(a))
        response = client.get("/readyz")
        assert response.status_code == 503
        assert json.loads(response.text)["ready"] is False
        a._step()  # builds the configuration from what was listed
        assert a.ready()
        assert client.get("/readyz").status_code == 200
        a._stop.set()  # never started: nothing for the cluster to stop


def plugin_builds(tries: list[float], *, failing: Callable[[], bool]) -> Callable[[Any], Any]:
    """A replica's ``scm`` hook: each build of the plugin is noted in ``tries`` (when), and
    raises while ``failing()`` says so (a plugin that cannot be made yet)."""

    def build(plugin: Any) -> Any:
        tries.append(time.monotonic())
        if failing():
            raise RuntimeError("the provider's plugin cannot be built yet")
        return plugin

    return build


def test_a_configuration_whose_build_failed_is_built_again_and_not_ready_before(
    tmp_path: Path,
) -> None:
    """Building the runtime for new objects can fail (a plugin that cannot be made yet):
    the replica keeps its configuration, stays not ready and tries again on its next
    step, where it once dropped the change until the next watch event and reported
    ready with no strategy known."""
    repo = GitOpsRepo.create(tmp_path, ["environment/dev", "environment/staging"])
    made: list[float] = []
    flaky = plugin_builds(made, failing=lambda: len(made) == 1)
    with fake_cluster(tmp_path) as cluster:
        local_objects(cluster, repo.path)
        a = cluster.replica("a", scm=flaky)
        a.start()
        wait_until(a.ready, what="the replica ready")
        assert len(made) >= 2  # the failed build was tried again
        assert a.runtime.config.strategy("team.guestbook") is not None
        assert a.assembled.config is a.runtime.config


def test_a_configuration_that_keeps_failing_to_build_is_tried_less_often_and_again_on_a_change(
    tmp_path: Path,
) -> None:
    """A build that fails every time is tried again after 1 s, then 2 s, 4 s (up to a
    minute), not on every step of the controller (about once a second, and on every
    watch event), each failure logged with its traceback; a change of the objects, which
    may mend it, tries again at once."""
    repo = GitOpsRepo.create(tmp_path, ["environment/dev", "environment/staging"])
    tries: list[float] = []
    broken = [True]
    failing = plugin_builds(tries, failing=lambda: broken[0])
    with fake_cluster(tmp_path) as cluster:
        local_objects(cluster, repo.path)
        a = cluster.replica("a", scm=failing)
        a.start()
        wait_until(lambda: len(tries) >= 3, timeout=60, what="three builds")
        assert tries[1] - tries[0] >= 1.0 and tries[2] - tries[1] >= 2.0, tries
        assert not a.ready()
        a._rebuild_after = float("inf")  # the next try never falls due: only a change helps
        broken[0] = False
        spec = cluster.fake.get("promotionstrategies", NS, "guestbook")["spec"]  # type: ignore[index]
        cluster.patch_spec("promotionstrategies", "guestbook", {**spec, "dryBranch": "main"})
        wait_until(a.ready, what="the replica ready")
        assert a.runtime.config.strategy("team.guestbook") is not None


def test_a_sharded_replica_is_not_ready_before_it_has_joined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new sharded replica warms up (clones the repositories of the shards it is about
    to be given) before it joins; until it has, it knows no shard's holder and would
    hold every request about another replica's strategy (seen in a rolling restart:
    status posts held 2 s by a replica reported ready): it is not ready."""
    warming, warmed = threading.Event(), threading.Event()
    warm_up = ShardedMode.warm_up

    def slow(self: ShardedMode, runtime: Any, shards: set[str]) -> None:
        warming.set()
        warmed.wait(10)
        warm_up(self, runtime, shards)

    monkeypatch.setattr(ShardedMode, "warm_up", slow)
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 2)
        a = cluster.sharded("a")
        readyz = cluster.addresses["a"] + "/readyz"
        wait_until(warming.is_set, what="a warming up")
        assert a.synced() and a._configured.is_set()
        assert not a.ready()
        assert httpx.get(readyz).status_code == 503
        warmed.set()
        wait_until(a.ready, what="a joined")
        assert httpx.get(readyz).status_code == 200
