"""Kubernetes mode offers the plugin's optional capabilities (issue 31's features), and
fences those that write, as it fences the base protocol's writes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from promoter.config import Repository
from promoter.kube.leadership.mode import NotLeader, leader_guard
from promoter.kube.resources.commit_statuses import CommitStatusIndex
from promoter.kube.runtime.scm import ClusterScm
from scm_plugins.protocol import (
    Approvals,
    Deployments,
    ForgottenCommits,
    MergeQueues,
    ReviewerRequests,
    Reviews,
    review_reader,
)

REPO = Repository(
    name="gitops", url="https://example.invalid/acme/gitops.git", scm_provider="github"
)


class Featured:
    """A plugin with deployments and reviews, recording what reaches it."""

    name = "featured"
    folded_gate_keys: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_deployment(self, **kw: Any) -> str:
        self.calls.append(("create_deployment", kw))
        return "17"

    def set_deployment_status(self, **kw: Any) -> None:
        self.calls.append(("set_deployment_status", kw))

    def get_reviews(self, **kw: Any) -> list[Any]:
        self.calls.append(("get_reviews", kw))
        return []

    def forget_commits(self, **kw: Any) -> None:
        self.calls.append(("forget_commits", kw))


class Plain:
    name = "plain"
    folded_gate_keys: frozenset[str] = frozenset()


def cluster(inner: object, *, leading: bool = True) -> ClusterScm:
    return ClusterScm(inner, guard=leader_guard(lambda: leading), statuses=CommitStatusIndex())  # type: ignore[arg-type]


def test_the_capabilities_a_plugin_has_are_offered_and_those_it_lacks_are_not() -> None:
    featured, plain = cluster(Featured()), cluster(Plain())
    assert isinstance(featured, Deployments)
    assert review_reader(featured) is not None and isinstance(featured, Reviews)
    assert not isinstance(featured, MergeQueues | ReviewerRequests | Approvals)
    assert not isinstance(plain, Deployments | Reviews | MergeQueues | ForgottenCommits)
    assert review_reader(plain) is None
    with pytest.raises(AttributeError):
        featured.anything_else  # noqa: B018  (not a capability: never passed on)


def test_a_capability_that_writes_runs_inside_the_repositorys_guard() -> None:
    inner = Featured()
    guarded: list[str] = []

    @contextmanager
    def guard(repository: str) -> Iterator[None]:
        guarded.append(repository)
        yield

    scm = ClusterScm(inner, guard=guard, statuses=CommitStatusIndex())  # type: ignore[arg-type]
    made = scm.create_deployment(
        repo=REPO,
        environment="prod",
        ref="environment/prod",
        sha="a" * 40,
        description="promoting",
        url="",
        log_url="",
    )
    assert made == "17" and guarded == ["gitops"]
    scm.get_reviews(repo=REPO, number=3, teams=[])  # a read: no guard
    assert guarded == ["gitops"]
    assert [name for name, _ in inner.calls] == ["create_deployment", "get_reviews"]


def test_a_replica_that_may_not_write_sends_no_deployment() -> None:
    inner = Featured()
    scm = cluster(inner, leading=False)
    with pytest.raises(NotLeader):
        scm.set_deployment_status(repo=REPO, deployment_id="17", state="success", url="")
    assert inner.calls == []


def test_what_the_plugin_cached_about_untracked_commits_is_let_go_even_when_not_leading() -> None:
    """Nothing is written to the SCM: no guard, so a replica that lost its hold still
    lets go of its own memory."""
    inner = Featured()
    scm = cluster(inner, leading=False)
    assert isinstance(scm, ForgottenCommits)
    scm.forget_commits(repo=REPO, shas={"a" * 40})
    assert inner.calls == [("forget_commits", {"repo": REPO, "shas": {"a" * 40}})]
