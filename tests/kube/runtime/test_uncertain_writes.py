"""A write whose answer never came (its request cut by its hold, or timed out) may have
been made all the same: the replica reads the repository back from the SCM before it
tries again, and so does not send the same write a second time (a second pull request
refused, a comment made twice)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from promoter.config import Repository
from promoter.errors import NotOwner, ScmUnavailable
from promoter.kube.resources.commit_statuses import CommitStatusIndex
from promoter.kube.runtime.scm import ClusterScm
from promoter.models import PullRequest
from scm_plugins.local.store import LocalStore
from scm_plugins.protocol import ScmPlugin
from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import ENVS, fleet, promoted, settled


class AnswerLost:
    """A plugin whose first pull request opened after ``armed`` is made, but whose answer
    is lost on the way back (as a request cut by its deadline)."""

    def __init__(self, inner: ScmPlugin) -> None:
        self.inner = inner
        self.armed = False
        self.lost: list[str] = []
        self.opened: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open_pull_request(self, **kwargs: Any) -> PullRequest:
        self.opened.append(kwargs["base"])
        pr = self.inner.open_pull_request(**kwargs)
        if self.armed:
            self.armed = False
            self.lost.append(kwargs["base"])
            raise ScmUnavailable("the request timed out: no answer came")
        return pr


def test_a_pull_request_whose_answer_was_lost_is_read_back_not_asked_for_again(
    tmp_path: Path,
) -> None:
    plugins: list[AnswerLost] = []

    def losing(inner: ScmPlugin) -> ScmPlugin:
        plugins.append(AnswerLost(inner))
        return plugins[-1]  # type: ignore[return-value]

    with fake_cluster(tmp_path) as cluster:
        repo = fleet(cluster, tmp_path, 1)["app-0"]
        a = cluster.sharded("a", scm=losing)
        wait_until(lambda: settled(cluster, [a]), what="a to hold the shard")
        wait_until(lambda: promoted(cluster, "app-0", repo.tip("main")), what="app-0 read")
        plugin = plugins[-1]
        plugin.armed = True
        plugin.opened.clear()
        change = repo.change("2.0.0", "Bump", ENVS)
        a.runtime.enqueue([f"{NS}.app-0"])
        wait_until(lambda: promoted(cluster, "app-0", change), timeout=30, what="promoted")
        assert plugin.lost == ["environment/dev"]
        assert plugin.opened == ENVS, "the lost pull request was asked for again"
        store = LocalStore(tmp_path / "scm" / "local-scm.sqlite3")
        try:
            bases = [row["base"] for row in store.all_prs(f"{NS}.repo-0")]
        finally:
            store.close()
        assert sorted(bases) == sorted(ENVS)


def test_a_failed_write_tells_which_repository_to_read_back_and_a_refusal_does_not() -> None:
    told: list[str] = []
    owner = {"held": True}

    class Failing:
        name = "failing"

        def comment_pull_request(self, **kwargs: Any) -> None:
            raise ScmUnavailable("reset by peer")

    def guard(repository: str) -> AbstractContextManager[None]:
        if not owner["held"]:
            raise NotOwner("another replica holds it")
        return nullcontext()

    scm = ClusterScm(
        Failing(),  # type: ignore[arg-type]
        guard=guard,
        statuses=CommitStatusIndex(),
        uncertain=told.append,
    )
    repo = Repository(name=f"{NS}.gitops", url="/nowhere", scm_provider="local")
    with pytest.raises(ScmUnavailable):
        scm.comment_pull_request(repo=repo, number=1, body="hello")
    owner["held"] = False
    with pytest.raises(NotOwner):
        scm.comment_pull_request(repo=repo, number=1, body="hello")
    assert told == [repo.name]
