"""An SCM plugin as the cluster runs it: writes fenced, CommitStatus CRs in reads.

The plugin's optional capabilities (reviews, approvals, deployments, merge queues,
reviewer requests, commit verification) are offered when the plugin offers them, so the
daemon sees the same features as in standalone mode; those that write are fenced too.

Every write (open, update, merge, close, comment, set a status) runs inside the
replica's write guard for its repository (its mode's ``writing``), which refuses before
anything is sent when this replica may not write there: with one leader,
``leader_guard`` raises ``NotLeader`` (temporary) once the Lease is lost; sharded,
``ShardFence.writing`` raises ``NotOwner`` once the repository's shard Lease has lapsed
or is being handed over. So no two
replicas ever write for one repository. Reads add the CommitStatus objects of the
commit to what the SCM reports.

A write that raises anything but ``NotOwner`` may have happened all the same (a request
cut by its hold or timed out before its answer came, a connection lost, a second request
of an operation refused after its first one was made): ``uncertain(repository)`` is
told, and the runtime reads the repository's pull requests and statuses back from the
SCM before its next decision, instead of retrying from what it cached.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from functools import wraps
from typing import Any

from promoter.config import Repository
from promoter.errors import NotOwner
from promoter.kube.resources.commit_statuses import CommitStatusIndex, merge
from promoter.models import CommitStatus, PullRequest
from scm_plugins.budget import CredentialBudget
from scm_plugins.fleet import Fleet
from scm_plugins.protocol import ScmPlugin

Guard = Callable[[str], AbstractContextManager[None]]
"""Given a repository's name, a context to write in (raises before it when we may not)."""

OPTIONAL_READS = frozenset(
    {
        "get_reviews",
        "reads_reviews",
        "queue_entry",
        "merge_queue_required",
        "commit_verification",
        "forget_commits",
    }
)
"""Optional capabilities (``scm_plugins.protocol``) passed through as the plugin has them
(``forget_commits`` writes nothing to the SCM: it lets go of what the plugin cached)."""
OPTIONAL_WRITES = frozenset(
    {
        "approve_pull_request",
        "create_deployment",
        "set_deployment_status",
        "enqueue_pull_request",
        "dequeue_pull_request",
        "request_reviewers",
    }
)
"""Optional capabilities that write: each call runs inside the repository's guard."""


class ClusterScm:
    """Wraps one plugin; same protocol (``ScmPlugin``)."""

    def __init__(
        self,
        inner: ScmPlugin,
        *,
        guard: Guard,
        statuses: CommitStatusIndex,
        uncertain: Callable[[str], None] = lambda repository: None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.guard = guard
        self.cluster_statuses = statuses
        self.uncertain = uncertain

    @contextmanager
    def _writing(self, repository: str) -> Iterator[None]:
        """One write on ``repository``, in its guard; one that fails after the guard let
        it through may have been made: ``uncertain`` is told."""
        with self.guard(repository):
            try:
                yield
            except NotOwner:
                raise  # nothing sent since: the next owner reads it all afresh anyway
            except Exception:
                self.uncertain(repository)
                raise

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        return self.inner.folded_gate_keys

    def set_budget_share(self, share: float) -> None:
        """Pass the replica's share of the credential's rate budget on, when the plugin
        keeps one (``scm_plugins.budget``)."""
        setter = getattr(self.inner, "set_budget_share", None)
        if setter is not None:
            setter(share)

    def spend_with(self, fleet: Fleet | None) -> None:
        """Keep the windows of the credential's budget with the fleet's (``fleet``), when
        the plugin keeps a budget: its counted-call helper's (``calls.budget``)."""
        budget = getattr(getattr(self.inner, "calls", None), "budget", None)
        if isinstance(budget, CredentialBudget):
            budget.spend_with(fleet)

    # --- reads -------------------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self.inner.find_open_pull_request(repo=repo, head=head, base=base)

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        scm = self.inner.get_commit_statuses(repo=repo, sha=sha, keys=keys)
        cluster = self.cluster_statuses.statuses(repo.name, sha)
        if keys is not None:
            cluster = [s for s in cluster if s.key in keys]
        return merge(scm, cluster)

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        return self.inner.git_environment(repo=repo)

    # --- writes ------------------------------------------------------------------------

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        with self._writing(repo.name):
            return self.inner.open_pull_request(
                repo=repo, head=head, base=base, title=title, body=body, labels=labels
            )

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        with self._writing(repo.name):
            return self.inner.update_pull_request(
                repo=repo, number=number, title=title, body=body, labels=labels
            )

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        with self._writing(repo.name):
            return self.inner.merge_pull_request(
                repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
            )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        with self._writing(repo.name):
            self.inner.close_pull_request(repo=repo, number=number, comment=comment)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        with self._writing(repo.name):
            self.inner.comment_pull_request(repo=repo, number=number, body=body)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        with self._writing(repo.name):
            self.inner.set_commit_status(repo=repo, sha=sha, status=status)

    def close(self) -> None:
        self.inner.close()

    # --- optional capabilities ----------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        """An optional capability of the plugin, when it has it (``AttributeError`` else,
        so ``isinstance(scm, Deployments)`` answers as for the plugin); a writing one runs
        inside the guard of the ``repo`` it is given. Anything else is not offered: a
        capability added to the protocol is fenced or passed on only once listed here."""
        if name not in OPTIONAL_READS and name not in OPTIONAL_WRITES:
            raise AttributeError(name)
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        found = getattr(inner, name)
        if name in OPTIONAL_READS:
            return found

        @wraps(found)
        def fenced(*, repo: Repository, **kwargs: Any) -> Any:
            with self._writing(repo.name):
                return found(repo=repo, **kwargs)

        return fenced
