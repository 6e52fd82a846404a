"""What a controller is given and what it watches: its settings (where to watch, who it
is, the Lease's timing, shards or one leader), the kinds of objects, and what of an object
says that its spec changed or that a person asked for a refresh."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from promoter.config import ScmProvider
from promoter.kube.client.api import Obj
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.resources.specs import REFRESH_ANNOTATION
from promoter.kube.shards.settings import ShardSettings
from scm_plugins.protocol import ScmPlugin

KINDS = {
    "promotionstrategies": "PromotionStrategy",
    "gitrepositories": "GitRepository",
    "scmproviders": "ScmProvider",
    "commitstatuses": "CommitStatus",
}


@dataclass(frozen=True)
class KubeSettings:
    """Where to watch, who we are, and the Lease's timing."""

    namespace: str | None
    lease: LeaseSettings
    identity: str
    watch_timeout: int = 60
    plugin_factory: Callable[[ScmProvider, str], ScmPlugin] | None = field(default=None)
    shards: ShardSettings | None = None
    """Shard the repositories over the live replicas; None: one leader does all the work."""


def generation_of(obj: Obj | None) -> Any:
    """The object's ``metadata.generation``: it moves when its spec changes."""
    return (obj or {}).get("metadata", {}).get("generation")


def refresh_of(obj: Obj | None) -> Any:
    """The object's refresh annotation: a person asking for a reconcile now."""
    return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(REFRESH_ANNOTATION)
