"""SCM deployments: what an environment runs, reported as a deployment to it.

A merge decided in a pass creates the deployment of its merge commit, in progress and
linked to the PR; a commit the environment runs without one (a merge queue's merge, a
person's merge, a lost answer, deployments just turned on) gets one too, linked to the
promotion PR when the queue merged the promoter's attempt for that dry commit, else to the
strategy's status page. It turns success when every active
gate of the environment is green on it, failure when one fails or a revert of it opens,
and inactive when a newer one supersedes it. The ledger keeps each deployment's id and
state, so nothing is reported twice. Pure: the snapshot and the pass's decisions only.
"""

from __future__ import annotations

from collections.abc import Sequence

from promoter.engine.core.actions import (
    Action,
    CreateDeployment,
    MergePullRequest,
    OpenRevert,
    SetDeploymentStatus,
)
from promoter.engine.core.ledger_state import Deployment
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.gates import phase_of
from promoter.engine.gates.publish import clip
from promoter.models import Phase


def deployment_actions(snapshot: Snapshot, index: int, decided: Sequence[Action]) -> list[Action]:
    """The deployment to create, or the status to set, for environment ``index`` now."""
    env = snapshot.environments[index]
    name = env.deployment.environment
    if name is None or env.error:
        return []
    latest = env.ledger.deployments[-1] if env.ledger.deployments else None
    live = latest.id if latest is not None and latest.state in ("in_progress", "success") else None
    merge = next(
        (a for a in decided if isinstance(a, MergePullRequest) and a.environment == index), None
    )
    if merge is not None:
        pr = env.revert_pull_request if merge.purpose == "revert" else env.pull_request
        return [
            CreateDeployment(
                environment=index,
                sha=None,
                dry_sha=merge.dry_sha,
                scm_environment=name,
                url=env.deployment.url,
                pr=merge.number,
                pr_url=pr.url if pr is not None and pr.url else snapshot.status_url,
                supersedes=live,
            )
        ]
    active = env.active
    if active is None or active.dry_sha is None or active.metadata_error:
        return []
    if latest is None or latest.hydrated_sha != active.hydrated_sha:
        queued = env.ledger.queue
        if queued is not None and (queued.dequeued_at or queued.dry_sha != active.dry_sha):
            queued = None  # not the queue's merge of the promoter's attempt for this commit
        return [
            CreateDeployment(
                environment=index,
                sha=active.hydrated_sha,
                dry_sha=active.dry_sha,
                scm_environment=name,
                url=env.deployment.url,
                pr=queued.number if queued is not None else None,
                pr_url=(queued.url if queued is not None else "") or snapshot.status_url,
                supersedes=live,
            )
        ]
    return _status(snapshot, index, latest, decided)


def _status(
    snapshot: Snapshot, index: int, latest: Deployment, decided: Sequence[Action]
) -> list[Action]:
    """The running deployment's state from the active gates and reverts."""
    env = snapshot.environments[index]
    assert env.active is not None and env.deployment.environment is not None
    if latest.state == "inactive":
        return []
    reverts = [r for r in env.ledger.reverts if r.bad_hydrated_sha == latest.hydrated_sha]
    opening = [a for a in decided if isinstance(a, OpenRevert) and a.environment == index]
    phases = {key: phase_of(env.active, key) for key in dict.fromkeys(env.active_keys)}
    failed = [key for key, phase in phases.items() if phase is Phase.FAILURE]
    if reverts or opening:
        reason = reverts[-1].reason if reverts else opening[0].reason
        state, text = "failure", f"reverted out of {env.branch}: {reason}"
    elif failed:
        state, text = "failure", f"{', '.join(failed)} failed on {short(latest.dry_sha)}"
    elif all(phase is Phase.SUCCESS for phase in phases.values()):
        state, text = "success", f"{env.branch} runs {short(latest.dry_sha)}, every gate green"
    else:
        return []
    if state == latest.state:
        return []
    return [
        SetDeploymentStatus(
            environment=index,
            deployment_id=latest.id,
            scm_environment=env.deployment.environment,
            state=state,
            description=clip(text),
            url=env.deployment.url,
            log_url=latest.link or snapshot.status_url,
        )
    ]
