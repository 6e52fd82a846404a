"""Pull request side effects: open, update, close, comment on and approve a PR through the
SCM plugin, keeping the PR cache in step and telling the observers.

A close re-reads the PR first: one a person merged or closed meanwhile is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from promoter.config import Repository
from promoter.daemon.acting.events import Observer, tell
from promoter.daemon.acting.reviewer_requests import ask
from promoter.engine import (
    Action,
    ApprovePullRequest,
    ClosePullRequest,
    CommentPullRequest,
    EnvironmentSnapshot,
    MergePullRequest,
    OpenPullRequest,
    RequestReviewers,
    Snapshot,
    UpdatePullRequest,
)
from promoter.errors import PermanentError, ScmError
from promoter.models import PullRequest
from promoter.state import PullRequestCache
from scm_plugins.protocol import Approvals, ReviewerRequests, ScmPlugin

log = logging.getLogger("promoter.actions")

PrKey = tuple[str, str, str]


def pr_key(repo: Repository, env: EnvironmentSnapshot, action: Action) -> PrKey:
    """The PR cache key of the pull request an action is about (a revert PR has its own head)."""
    revert = env.revert_pull_request
    if isinstance(action, MergePullRequest) and action.purpose == "revert" and revert is not None:
        return (repo.name, revert.head_branch, env.branch)
    return (repo.name, env.proposed_branch, env.branch)


@dataclass
class PullRequests:
    plugin: ScmPlugin
    pr_cache: PullRequestCache
    observers: Sequence[Observer]

    def change(
        self,
        snapshot: Snapshot,
        repo: Repository,
        action: OpenPullRequest | UpdatePullRequest | ClosePullRequest,
    ) -> None:
        """Open, update or close the promotion PR of the action's environment."""
        env = snapshot.environments[action.environment]
        key = pr_key(repo, env, action)
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        match action:
            case OpenPullRequest():
                pr = self.plugin.open_pull_request(
                    repo=repo,
                    head=action.head,
                    base=action.base,
                    title=action.title,
                    body=action.body,
                    labels=action.labels,
                )
                self.pr_cache.put(key, pr)
                self.kept(snapshot, env.branch, action.labels, pr)
                log.info("pull request opened", extra={**fields, "pr": pr.number})
                self._tell("opened", snapshot, env, action.title, pr.head_sha, pr.number, pr.url)
            case UpdatePullRequest():
                pr = self.plugin.update_pull_request(
                    repo=repo,
                    number=action.number,
                    title=action.title,
                    body=action.body,
                    labels=action.labels,
                )
                self.pr_cache.put(key, pr)
                self.kept(snapshot, env.branch, action.labels, pr)
                log.info("pull request updated", extra={**fields, "pr": action.number})
                self._tell("updated", snapshot, env, action.title, pr=action.number)
            case ClosePullRequest():
                self._close(snapshot, repo, env, action, key)
            case _:
                assert_never(action)

    def _close(
        self,
        snapshot: Snapshot,
        repo: Repository,
        env: EnvironmentSnapshot,
        action: ClosePullRequest,
        key: PrKey,
    ) -> None:
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        current = self.plugin.find_open_pull_request(
            repo=repo, head=env.proposed_branch, base=env.branch
        )
        if current is None or current.number != action.number:
            # A person merged or closed it meanwhile: leave it alone.
            self.pr_cache.put(key, current)
            log.info("pull request no longer open, left alone", extra=fields)
            return
        self.plugin.close_pull_request(repo=repo, number=action.number, comment=action.comment)
        self.pr_cache.put(key, None)
        log.info("pull request closed", extra={**fields, "pr": action.number})
        self._tell("closed", snapshot, env, action.comment, pr=action.number)

    def kept(
        self, snapshot: Snapshot, branch: str, wanted: tuple[str, ...], pr: PullRequest
    ) -> None:
        """Labels the SCM did not keep are set aside (``UnheldLabels``) and reported once."""
        refused = self.pr_cache.unheld.observe(snapshot.repository, wanted, pr.labels)
        if refused:
            log.warning(
                "the SCM did not keep labels on a pull request; asking again later",
                extra={
                    "strategy": snapshot.strategy,
                    "environment": branch,
                    "pr": pr.number,
                    "labels": sorted(refused),
                    "retry_in": min(refused.values()),
                },
            )

    def request_reviewers(
        self, snapshot: Snapshot, repo: Repository, action: RequestReviewers
    ) -> None:
        """Ask for the reviews (``reviewer_requests.ask``: one refused name does not leave the
        others unasked); who could not be asked, left out up front (the PR's opener, the
        change's authors) or refused by the SCM, is told on the PR, once."""
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        who = {"users": list(action.users), "teams": list(action.teams)}
        if not isinstance(self.plugin, ReviewerRequests):
            log.warning("the SCM cannot request reviewers", extra={**fields, **who})
            return
        asked = ask(self.plugin, repo, action.number, action.users, action.teams)
        unasked = [*action.left_out, *asked.refused]
        if asked.refused:
            log.warning("reviewers refused", extra={**fields, **who, "refused": asked.refused})
        if asked.users or asked.teams:
            log.info(
                "reviewers requested", extra={**fields, "users": asked.users, "teams": asked.teams}
            )
            text = ", ".join((*asked.users, *asked.teams))
            self._tell(
                "reviewers", snapshot, env, f"review requested from {text}", pr=action.number
            )
        if unasked:
            body = f"The promoter could not ask for a review from: {'; '.join(unasked)}."
            try:
                self.plugin.comment_pull_request(repo=repo, number=action.number, body=body)
            except ScmError as exc:  # told in the log instead; the request is not made again
                log.warning("reviewers not asked, not told", extra={**fields, "reason": str(exc)})

    def comment(self, repo: Repository, action: CommentPullRequest) -> None:
        self.plugin.comment_pull_request(repo=repo, number=action.number, body=action.body)

    def approve(self, snapshot: Snapshot, repo: Repository, action: ApprovePullRequest) -> None:
        """Approve as a person, through an SCM that takes approvals from promoter."""
        if not isinstance(self.plugin, Approvals):
            raise PermanentError(
                f"the {self.plugin.name} SCM takes approvals in its own UI, not from promoter"
            )
        self.plugin.approve_pull_request(repo=repo, number=action.number, user=action.user)
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        log.info("pull request approved", extra={**fields, "user": action.user})
        self._tell("approved", snapshot, env, f"approved by {action.user}", pr=action.number)

    def _tell(
        self,
        kind: str,
        snapshot: Snapshot,
        env: EnvironmentSnapshot,
        message: str,
        sha: str = "",
        pr: int | None = None,
        link: str = "",
    ) -> None:
        """``sha`` is the PR's head, a hydrated commit; the dry one is the proposed's."""
        dry = (env.proposed.dry_sha or "") if env.proposed is not None else ""
        tell(
            self.observers,
            kind,
            snapshot.strategy,
            env.branch,
            message,
            sha,
            pr,
            dry_sha=dry,
            hydrated_sha=sha,
            link=link,
        )
