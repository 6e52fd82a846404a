"""The deployments part of an environment's snapshot: the SCM environment its promotions are
reported to as deployments, when the configuration turns them on and the SCM plugin can."""

from __future__ import annotations

from promoter.config import Environment, PromotionStrategy
from promoter.engine import DeploymentTarget
from scm_plugins.protocol import Deployments, ScmPlugin

NOT_REPORTED = DeploymentTarget()


def deployment_target(
    plugin: ScmPlugin, strategy: PromotionStrategy, env: Environment
) -> DeploymentTarget:
    """Where promotions of ``env`` are reported; not reported when off or not possible."""
    target = strategy.deployment_of(env)
    if target is None or not isinstance(plugin, Deployments):
        return NOT_REPORTED
    return DeploymentTarget(environment=target[0], url=target[1])
