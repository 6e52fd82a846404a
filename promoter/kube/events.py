"""Kubernetes Events for what the promoter did: promotions, merges, reverts, holds.

An observer of the executor (``ActionEvent``) that records an Event on the
PromotionStrategy object, so ``kubectl describe promotionstrategy`` tells the story.
Recording never blocks or fails a reconcile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s

from promoter.daemon import ActionEvent
from promoter.kube.api import Kube, KubeError
from promoter.kube.resources import API_VERSION

log = logging.getLogger("promoter.kube.events")

REASONS: dict[str, tuple[str, str]] = {
    "opened": ("PromotionOpened", "Normal"),
    "merged": ("Promoted", "Normal"),
    "closed": ("PullRequestClosed", "Normal"),
    "revert": ("RevertOpened", "Warning"),
    "reverted": ("Reverted", "Warning"),
    "paused": ("Held", "Warning"),
    "released": ("HoldReleased", "Normal"),
    "healthy": ("Healthy", "Normal"),
}
"""ActionEvent kind -> (Event reason, Event type); other kinds are not recorded."""


class EventRecorder:
    """Turns ActionEvents into Events on the strategy object found by ``lookup``."""

    def __init__(
        self,
        kube: Kube,
        lookup: Callable[[str], dict[str, Any] | None],
        *,
        component: str = "promoter",
        instance: str = "",
    ) -> None:
        self.kube = kube
        self.lookup = lookup
        self.component = component
        self.instance = instance
        self.recorded = 0

    def __call__(self, event: ActionEvent) -> None:
        reason = REASONS.get(event.kind)
        obj = self.lookup(event.strategy)
        if reason is None or obj is None:
            return
        meta = obj.get("metadata", {})
        now = datetime.now(UTC)
        message = f"{event.environment}: {event.message}"
        if event.pr is not None:
            message += f" (PR #{event.pr})"
        body = k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(
                generate_name=f"{meta.get('name')}.", namespace=meta.get("namespace")
            ),
            involved_object=k8s.V1ObjectReference(
                api_version=API_VERSION,
                kind="PromotionStrategy",
                name=meta.get("name"),
                namespace=meta.get("namespace"),
                uid=meta.get("uid"),
                resource_version=meta.get("resourceVersion"),
            ),
            reason=reason[0],
            type=reason[1],
            message=message[:1024],
            first_timestamp=now,
            last_timestamp=now,
            count=1,
            source=k8s.V1EventSource(component=self.component, host=self.instance or None),
            reporting_component=f"promoter.argoproj.io/{self.component}",
            reporting_instance=self.instance or None,
        )
        try:
            self.kube.create_event(str(meta.get("namespace")), body)
            self.recorded += 1
        except KubeError as exc:
            log.warning("event not recorded", extra={"reason": reason[0], "error": str(exc)})
