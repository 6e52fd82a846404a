"""Manual operations as engine inputs: what a person's hold, release, revert, promote or
merge means.

Each takes a snapshot and the request and returns the actions that carry it out, or a
``Refusal`` saying why not. The daemon runs the actions through the same executor as a
reconcile, so these rules live here and nowhere else.
"""

from __future__ import annotations

from datetime import datetime

from promoter import markup
from promoter.config import environment_index as find_environment
from promoter.engine.core.actions import (
    Action,
    ApproveChange,
    ApprovePullRequest,
    CommentPullRequest,
    Frozen,
    HoldDryCommit,
    PinEnvironment,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
)
from promoter.engine.core.dag import and_downstream
from promoter.engine.core.merging import merge_action
from promoter.engine.core.pr_text import for_environment, short
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.decide import backwards_reason, open_pull_request
from promoter.engine.gates.freeze import frozen
from promoter.engine.gates.gates import error_reason, evaluate
from promoter.engine.reverts.revert import manual_revert
from promoter.models import Phase, PullRequestState


class Refusal(Frozen):
    """Why an operation cannot be done as asked; ``status`` is the HTTP status to answer."""

    reason: str
    status: int = 409


def environment_index(snapshot: Snapshot, environment: str) -> int | None:
    """The index of ``environment``, named by branch (``environment/dev``) or last part;
    ``AmbiguousName`` for a last part several branches share (``promoter.config.names``)."""
    branches = [env.branch for env in snapshot.environments]
    return find_environment(branches, environment, strategy=snapshot.strategy)


def full_dry_sha(snapshot: Snapshot, sha: str) -> str | Refusal:
    """A full dry SHA from a prefix a person typed, among the dry SHAs the snapshot knows."""
    sha = sha.lower()
    known = {
        s
        for env in snapshot.environments
        for s in (
            env.active.dry_sha if env.active else None,
            env.proposed.dry_sha if env.proposed else None,
            *(h.dry_sha for h in env.ledger.holds),
            *(r.dry_sha for r in env.ledger.healthy),
        )
        if s
    }
    matches = [s for s in known if s.startswith(sha)]
    if len(matches) == 1:
        return matches[0]
    if len(sha) == 40:
        return sha
    return Refusal(
        reason=f"{sha} does not name one known dry commit; give the full SHA", status=422
    )


def hold(
    snapshot: Snapshot,
    index: int,
    *,
    dry_sha: str | None,
    reason: str,
    now: datetime,
    by: str,
) -> list[Action] | Refusal:
    """Hold a dry commit (default: the proposed one) here and in every later environment;
    the hold's reason names who set it (``by``)."""
    if not reason.strip():
        return Refusal(reason="a hold needs a reason", status=422)
    env = snapshot.environments[index]
    wanted = dry_sha or (env.proposed.dry_sha if env.proposed else None)
    if wanted is None:
        return Refusal(reason=f"nothing is proposed for {env.branch}; give --dry-sha", status=422)
    sha = full_dry_sha(snapshot, wanted)
    if isinstance(sha, Refusal):
        return sha
    return [
        HoldDryCommit(environment=i, dry_sha=sha, reason=f"held by {by}: {reason}", since=now)
        for i in and_downstream(snapshot, index)
    ]


def release(
    snapshot: Snapshot,
    index: int,
    *,
    dry_sha: str | None,
    now: datetime,
    by: str,
    revert_holds: bool = True,
) -> list[Action] | Refusal:
    """Lift holds (one dry commit, or all of this environment's) here and later; resume here.

    Without ``revert_holds`` (a caller who is no admin), a hold a revert set (the bad
    commit it reverted) is not released: the answer is a refusal naming it."""
    env = snapshot.environments[index]
    if dry_sha:
        sha = full_dry_sha(snapshot, dry_sha)
        if isinstance(sha, Refusal):
            return sha
        shas = [sha]
    else:
        shas = [h.dry_sha for h in env.ledger.holds]
    released = [
        (i, hold)
        for i in and_downstream(snapshot, index)
        for hold in snapshot.environments[i].ledger.holds
        if hold.dry_sha in shas
    ]
    if not revert_holds:
        reverted = [(i, h) for i, h in released if h.source == "revert"]
        if reverted:
            i, h = reverted[0]
            branch = snapshot.environments[i].branch
            return Refusal(
                reason=f"the hold on {short(h.dry_sha)} in {branch} was set by a revert;"
                " releasing it needs the admin role",
                status=403,
            )
    actions: list[Action] = [
        ReleaseHold(environment=i, dry_sha=sha, reason=f"released by {by}")
        for i in and_downstream(snapshot, index)
        for sha in shas
        if any(h.dry_sha == sha for h in snapshot.environments[i].ledger.holds)
    ]
    actions.append(ResumeEnvironment(environment=index, at=now))
    return actions


def revert(
    snapshot: Snapshot, index: int, *, to: str | None, auto_merge: bool, by: str
) -> list[Action] | Refusal:
    """Revert an environment to its last healthy commit, or to ``to``; the revert's reason
    (its PR's words) names who asked (``by``)."""
    action = manual_revert(snapshot, index, to=to, auto_merge=auto_merge, by=by)
    return Refusal(reason=action) if isinstance(action, str) else [action]


def promote(
    snapshot: Snapshot, index: int, *, reason: str, now: datetime, by: str
) -> list[Action] | Refusal:
    """Break glass: merge the proposed commit past every gate but never-backwards.

    Without a promotion PR yet, the answer is to open it (the same PR a reconcile would
    open); asked again with the PR open, the answer is to comment (naming ``by``), merge
    and record it.
    """
    if not reason.strip():
        return Refusal(reason="a break-glass promotion needs a reason", status=422)
    env = snapshot.environments[index]
    problem = error_reason(env)
    if problem is not None:
        return Refusal(reason=problem)
    if env.proposed is None or env.active is None:
        return Refusal(reason=f"nothing is proposed for {env.branch}")
    proposed, active = env.proposed.dry_sha, env.active.dry_sha
    if proposed is None or active is None:
        return Refusal(reason=f"{env.branch} cannot be read")
    if proposed == active:
        return Refusal(reason=f"{env.branch} already runs {short(proposed)}")
    backwards = backwards_reason(snapshot, index, proposed)
    if backwards is not None:
        return Refusal(reason=backwards)
    freeze = frozen(snapshot, index)
    if freeze is not None:  # a freeze stops break-glass promotions too: lift it first
        return Refusal(reason=f"{env.branch} is {freeze.reason}; unfreeze it first")
    pr = env.pull_request
    if pr is None:
        text = for_environment(snapshot, index, dry_sha=proposed, active_dry_sha=active)
        return [open_pull_request(snapshot, index, text)]
    if pr.head_sha != env.proposed.hydrated_sha:
        return Refusal(
            reason=f"pull request #{pr.number} is behind {env.proposed_branch}; try again"
        )
    return [
        CommentPullRequest(
            environment=index,
            number=pr.number,
            body=(
                f"Break-glass promotion past the gates by {markup.markdown(by)}:"
                f" {markup.markdown(reason)}"
            ),
        ),
        merge_action(snapshot, index, pr.number, override=True),
        RecordOverride(environment=index, dry_sha=proposed, reason=reason, at=now),
    ]


def merge(snapshot: Snapshot, index: int, *, by: str | None = None) -> list[Action] | Refusal:
    """A person merges the PR that waits for one: the open revert PR, else the promotion
    PR once every gate passes (``promote`` is the way past them). The merge carries the
    head the person saw as its guard: a PR whose head moved is refused, never merged.
    The merge message names ``by``, when given."""
    env = snapshot.environments[index]
    revert = env.revert_pull_request
    latest = env.ledger.reverts[-1] if env.ledger.reverts else None
    if revert is not None and revert.state is PullRequestState.OPEN and latest is not None:
        if revert.head_sha != latest.revert_sha:
            return Refusal(reason=f"revert PR #{revert.number} moved; look at it again")
        return [merge_action(snapshot, index, revert.number, revert=latest, by=by)]
    problem = error_reason(env)
    if problem is not None:
        return Refusal(reason=problem)
    pr = env.pull_request
    if pr is None or pr.state is not PullRequestState.OPEN or env.proposed is None:
        return Refusal(reason=f"{env.branch} has no open pull request to merge")
    proposed = env.proposed.dry_sha
    assert proposed is not None  # by error_reason
    if pr.head_sha != env.proposed.hydrated_sha:
        return Refusal(
            reason=f"pull request #{pr.number} is behind {env.proposed_branch}; try again"
        )
    backwards = backwards_reason(snapshot, index, proposed)
    if backwards is not None:
        return Refusal(reason=backwards)
    waiting = [g.reason for g in evaluate(snapshot, index) if g.phase is not Phase.SUCCESS]
    if waiting:
        return Refusal(
            reason="not every gate passes: "
            + "; ".join(waiting)
            + " (promoter promote merges past them, kept in the ledger)"
        )
    return [merge_action(snapshot, index, pr.number, by=by)]


def approve(snapshot: Snapshot, index: int, *, user: str) -> list[Action] | Refusal:
    """Approve the environment's open promotion PR as ``user``."""
    if not user.strip():
        return Refusal(reason="an approval needs a user", status=422)
    env = snapshot.environments[index]
    pr = env.pull_request
    if pr is None:
        return Refusal(reason=f"{env.branch} has no open pull request to approve")
    return [ApprovePullRequest(environment=index, number=pr.number, user=user.strip())]


def pin(
    snapshot: Snapshot, index: int, *, dry_sha: str, reason: str, now: datetime
) -> list[Action] | Refusal:
    """Keep environment ``index`` on ``dry_sha``: nothing else is promoted there."""
    if not reason.strip():
        return Refusal(reason="a pin needs a reason", status=422)
    sha = full_dry_sha(snapshot, dry_sha)
    if isinstance(sha, Refusal):
        return sha
    return [PinEnvironment(environment=index, dry_sha=sha, reason=reason, since=now)]


def unpin(snapshot: Snapshot, index: int) -> list[Action] | Refusal:
    env = snapshot.environments[index]
    if env.ledger.pin is None:
        return Refusal(reason=f"{env.branch} is not pinned")
    return [PinEnvironment(environment=index, dry_sha=None)]


def approve_change(snapshot: Snapshot, *, dry_sha: str) -> list[Action] | Refusal:
    """Let a blocked dry commit through every environment that blocks it."""
    sha = full_dry_sha(snapshot, dry_sha)
    if isinstance(sha, Refusal):
        return sha
    blocking = [i for i, e in enumerate(snapshot.environments) if e.rollout.block_trailer]
    if not blocking:
        return Refusal(reason=f"{snapshot.strategy} blocks no changes (no blockedChanges)")
    return [ApproveChange(environment=i, dry_sha=sha) for i in blocking]
