"""Kubernetes Events for what the promoter did: promotions, merges, reverts, holds.

An observer of the executor (``ActionEvent``) that records an Event on the
PromotionStrategy object, so ``kubectl describe promotionstrategy`` tells the story.
Recording never fails a reconcile; given ``post`` (the controller's
``promoter.kube.resources.publisher.Publisher.append``), it does not wait for the API server either:
the Event is made in the reconcile and created on the publisher's thread. An Event is a
write like any other: given ``fenced`` (the controller's, through its mode), it is
created only while this replica writes for the strategy's repository, checked when it
is created, not when it was made (sharded: an Event queued before the shard's hold
lapsed or moved is dropped; the strategy's next owner tells what it does itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s

from promoter.daemon import ActionEvent
from promoter.kube.client.api import Kube, KubeError
from promoter.kube.resources.specs import API_VERSION

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
        post: Callable[[Callable[[], None]], None] | None = None,
        fenced: Callable[[str, Callable[[], None]], None] | None = None,
    ) -> None:
        """``fenced(strategy, create)``: runs ``create`` if this replica may write for
        the strategy now, else drops it."""
        self.kube = kube
        self.lookup = lookup
        self.post = post
        self.fenced = fenced
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
        namespace = str(meta.get("namespace"))
        strategy = event.strategy
        if self.post is None:
            self._fenced(strategy, namespace, body)
        else:
            self.post(lambda: self._fenced(strategy, namespace, body))

    def _fenced(self, strategy: str, namespace: str, body: k8s.CoreV1Event) -> None:
        if self.fenced is None:
            self._create(namespace, body)
        else:
            self.fenced(strategy, lambda: self._create(namespace, body))

    def _create(self, namespace: str, body: k8s.CoreV1Event) -> None:
        try:
            self.kube.create_event(namespace, body)
            self.recorded += 1
        except KubeError as exc:
            log.warning("event not recorded", extra={"reason": body.reason, "error": str(exc)})
