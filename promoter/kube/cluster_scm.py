"""An SCM plugin as the cluster runs it: writes fenced by leadership, CommitStatus CRs in reads.

Every write (open, update, merge, close, comment, set a status) first asks whether this
replica still leads; a replica that lost the Lease raises ``NotLeader`` (temporary) and
writes nothing, so no two replicas ever merge. Reads add the CommitStatus objects of the
commit to what the SCM reports.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from promoter.config import Repository
from promoter.errors import ScmUnavailable
from promoter.kube.commit_statuses import CommitStatusIndex, merge
from promoter.models import CommitStatus, PullRequest
from scm_plugins.protocol import ScmPlugin


class NotLeader(ScmUnavailable):
    """This replica does not hold the Lease: it must not write."""


class ClusterScm:
    """Wraps one plugin; same protocol (``ScmPlugin``)."""

    def __init__(
        self, inner: ScmPlugin, *, is_leader: Callable[[], bool], statuses: CommitStatusIndex
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.is_leader = is_leader
        self.cluster_statuses = statuses

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        return self.inner.folded_gate_keys

    def _fence(self) -> None:
        if not self.is_leader():
            raise NotLeader("this replica is not the leader; it writes nothing")

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
        self._fence()
        return self.inner.open_pull_request(
            repo=repo, head=head, base=base, title=title, body=body, labels=labels
        )

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        self._fence()
        return self.inner.update_pull_request(
            repo=repo, number=number, title=title, body=body, labels=labels
        )

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        self._fence()
        return self.inner.merge_pull_request(
            repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._fence()
        self.inner.close_pull_request(repo=repo, number=number, comment=comment)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._fence()
        self.inner.comment_pull_request(repo=repo, number=number, body=body)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._fence()
        self.inner.set_commit_status(repo=repo, sha=sha, status=status)

    def close(self) -> None:
        self.inner.close()
