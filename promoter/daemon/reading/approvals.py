"""The approvals part of an environment's snapshot: what approval gates and reviewer
requests read of the open pull request.

``read_approvals`` fills it: the PR's reviews, read only when an approval gate asks
(through ``review_reads``, bounded and never raising); the users and teams to request
(configured, and the owners of what the PR changes by the active branch's CODEOWNERS),
only until they were asked; who wrote the change, only when a gate leaves them out or
reviewers are to be requested. Without an open PR nothing is read.
"""

from __future__ import annotations

from promoter.config import Environment, GateSpec, Repository
from promoter.daemon.reading.review_reads import ReviewReads
from promoter.engine import Approvals, AuthorsRead, CommitState, EnvLedger, ReviewsRead
from promoter.errors import GitError
from promoter.git import GitMirror
from promoter.git.codeowners import change_owners
from promoter.models import PullRequest
from scm_plugins.protocol import ScmPlugin, review_reader

NOT_ASKED_REVIEWS = ReviewsRead()
NOT_ASKED_AUTHORS = AuthorsRead()
NO_APPROVALS = Approvals()
"""Nothing asked (the common case, shared)."""


def read_approvals(
    plugin: ScmPlugin,
    reads: ReviewReads,
    repo: Repository,
    mirror: GitMirror,
    env: Environment,
    gates: tuple[GateSpec, ...],
    pr: PullRequest | None,
    active: CommitState | None,
    proposed: CommitState | None,
    ledger: EnvLedger,
) -> Approvals:
    """The environment's approvals part (see the module)."""
    if pr is None:
        return NO_APPROVALS
    reviews = read_reviews(plugin, reads, repo, gates, pr)
    users, teams = reviewers_to_request(env, mirror, active, proposed, pr, ledger)
    authors = change_authors(mirror, gates, pr, active, proposed, reviewers=bool(users))
    if reviews is NOT_ASKED_REVIEWS and authors is NOT_ASKED_AUTHORS and not (users or teams):
        return NO_APPROVALS
    return Approvals(reviews=reviews, change_authors=authors, reviewers=users, reviewer_teams=teams)


def read_reviews(
    plugin: ScmPlugin,
    reads: ReviewReads,
    repo: Repository,
    gates: tuple[GateSpec, ...],
    pr: PullRequest,
) -> ReviewsRead:
    """The open PR's reviews, read only when an approval gate needs them."""
    wanted = [g.approval for g in gates if g.approval is not None]
    if not wanted:
        return NOT_ASKED_REVIEWS
    reviewer = review_reader(plugin)
    if reviewer is None:
        return ReviewsRead(reason=f"approval: the {plugin.name} SCM plugin cannot read reviews")
    teams = sorted({team for approval in wanted for team in approval.teams})
    timeout = min(approval.timeout for approval in wanted)
    return reads.read(reviewer, plugin.name, repo, pr.number, teams, timeout=timeout)


def reviewers_to_request(
    env: Environment,
    mirror: GitMirror,
    active: CommitState | None,
    proposed: CommitState | None,
    pr: PullRequest | None,
    ledger: EnvLedger,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The users and teams to request on the open PR: configured, and (``codeowners``) the
    owners of what it changes by the active branch's CODEOWNERS; read only until asked."""
    wanted = env.reviewers
    if wanted is None or pr is None or pr.number in ledger.reviewers_requested:
        return (), ()
    users, teams = list(wanted.users), list(wanted.teams)
    if wanted.codeowners and active is not None and proposed is not None:
        for owner in change_owners(
            mirror.path, active.hydrated_sha, active.hydrated_sha, proposed.hydrated_sha
        ):
            (teams if "/" in owner else users).append(owner)
    return tuple(dict.fromkeys(users)), tuple(dict.fromkeys(teams))


def change_authors(
    mirror: GitMirror,
    gates: tuple[GateSpec, ...],
    pr: PullRequest | None,
    active: CommitState | None,
    proposed: CommitState | None,
    *,
    reviewers: bool = False,
) -> AuthorsRead:
    """Who wrote the dry commits being promoted, read only when a PR is open and an approval
    gate leaves them out (``excludeChangeAuthors``) or ``reviewers`` are to be asked for
    (the authors are not asked); else not asked, or why they cannot be read."""
    excluded = any(g.approval and g.approval.exclude_change_authors for g in gates)
    if pr is None or not (excluded or reviewers):
        return NOT_ASKED_AUTHORS
    if active is None or proposed is None or not active.dry_sha or not proposed.dry_sha:
        return AuthorsRead(reason="approval: the dry commits being promoted are not known")
    try:
        return AuthorsRead(value=mirror.authors(active.dry_sha, proposed.dry_sha))
    except GitError as exc:
        return AuthorsRead(reason=f"approval: the authors of the change cannot be read: {exc}")
