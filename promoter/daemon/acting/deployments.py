"""Carrying out the engine's deployment actions through the SCM plugin, and recording each
deployment (its id and state) in the environment's ledger.

A deployment is created in progress and recorded at once (a crash before the record costs
a second deployment, never a lost one); the one it supersedes is set inactive. A status
for a deployment the SCM no longer knows (deleted by a person) is not asked again: the
record is set inactive and the environment's next deployment starts afresh.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from promoter.config import Repository
from promoter.engine import CreateDeployment, Deployment, SetDeploymentStatus, Snapshot
from promoter.errors import ScmNotFound
from promoter.git import GitMirror
from promoter.state import GitLedger
from scm_plugins.protocol import Deployments, ScmPlugin

log = logging.getLogger("promoter.actions")


@dataclass
class DeploymentReporter:
    plugin: ScmPlugin
    ledger: GitLedger

    def create(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        action: CreateDeployment,
        sha: str,
    ) -> None:
        env = snapshot.environments[action.environment]
        if not isinstance(self.plugin, Deployments):
            return
        what = f"promoted by #{action.pr}" if action.pr else "running"
        deployment_id = self.plugin.create_deployment(
            repo=repo,
            environment=action.scm_environment,
            ref=env.branch,
            sha=sha,
            description=f"{snapshot.strategy}: {action.dry_sha[:7]} {what}",
            url=action.url,
            log_url=action.pr_url,
        )
        record = Deployment(
            id=deployment_id,
            hydrated_sha=sha,
            dry_sha=action.dry_sha,
            state="in_progress",
            at=snapshot.now,
            pr=action.pr,
            link=action.pr_url,
        )
        self.ledger.update(
            mirror, snapshot.strategy, env.branch, lambda led: led.with_deployment(record)
        )
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "sha": sha}
        log.info("deployment created", extra={**fields, "deployment": deployment_id})
        if action.supersedes is not None:
            previous = next((d for d in env.ledger.deployments if d.id == action.supersedes), None)
            if previous is not None:
                self.status(
                    snapshot,
                    repo,
                    mirror,
                    SetDeploymentStatus(
                        environment=action.environment,
                        deployment_id=previous.id,
                        scm_environment=action.scm_environment,
                        state="inactive",
                        description=f"superseded by {action.dry_sha[:7]}",
                        url=action.url,
                        log_url=previous.link,
                    ),
                )

    def status(
        self, snapshot: Snapshot, repo: Repository, mirror: GitMirror, action: SetDeploymentStatus
    ) -> None:
        env = snapshot.environments[action.environment]
        if not isinstance(self.plugin, Deployments):
            return
        known = next((d for d in env.ledger.deployments if d.id == action.deployment_id), None)
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        state = action.state
        try:
            self.plugin.set_deployment_status(
                repo=repo,
                deployment_id=action.deployment_id,
                environment=action.scm_environment,
                state=action.state,
                description=action.description,
                url=action.url,
                log_url=action.log_url,
            )
        except ScmNotFound as exc:
            log.warning(
                "deployment gone from the SCM",
                extra={**fields, "deployment": action.deployment_id, "error": str(exc)},
            )
            state = "inactive"
        log.info(
            "deployment status",
            extra={**fields, "deployment": action.deployment_id, "state": state},
        )
        if known is not None:
            updated = known.model_copy(update={"state": state, "at": snapshot.now})
            self.ledger.update(
                mirror, snapshot.strategy, env.branch, lambda led: led.with_deployment(updated)
            )
