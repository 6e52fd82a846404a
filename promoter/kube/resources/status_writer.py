"""Writes custom resources' status through the status subresource, only when it changed.

The writer remembers what it wrote last per object (the watch may not have shown it
back yet), so two reconciles in a row on unchanged state write once, and an idle
resync writes nothing. ``write_ready_statuses`` is what the leader writes of the objects
that belong to no repository.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import Counter

from promoter.kube.client.api import Kube, KubeError
from promoter.kube.resources.status import ready_status, same, strategy_status
from promoter.metrics import REGISTRY

log = logging.getLogger("promoter.kube.status")

STATUS_WRITES = Counter(
    "promoter_kube_status_writes_total",
    "Status subresource writes, by resource",
    ["resource"],
    registry=REGISTRY,
)

Obj = dict[str, Any]

READY_KINDS = {
    "promotionstrategies": "PromotionStrategy",
    "gitrepositories": "GitRepository",
    "scmproviders": "ScmProvider",
}
"""The kinds whose Ready status the leader writes (by plural)."""


class StatusWriter:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.writes = 0
        self.skipped = 0
        self._lock = threading.Lock()
        self._written: dict[tuple[str, str, str], Obj] = {}

    def forget(self) -> None:
        """Drop what was written (a new leader compares with the objects themselves)."""
        with self._lock:
            self._written.clear()

    def write(self, plural: str, obj: Obj, status: Obj) -> bool:
        """Patch ``status`` onto ``obj`` unless it already has it; True when written."""
        meta = obj.get("metadata", {})
        key = (plural, str(meta.get("namespace")), str(meta.get("name")))
        with self._lock:
            known = self._written.get(key)
        if same(obj.get("status"), status) or (known is not None and same(known, status)):
            with self._lock:
                self.skipped += 1
            return False
        try:
            self.kube.patch_status(plural, key[1], key[2], status)
        except KubeError as exc:
            if exc.status != 404:  # a deleted object needs no status
                log.warning("status not written", extra={"object": key[2], "error": str(exc)})
            return False
        with self._lock:
            self._written[key] = status
            self.writes += 1
        STATUS_WRITES.labels(plural).inc()
        log.info("status written", extra={"resource": plural, "object": key[2]})
        return True


def write_ready_statuses(
    writer: StatusWriter,
    objects: Callable[[str], list[Obj]],
    problems: Mapping[tuple[str, str, str], str],
    *,
    leading: Callable[[], bool],
) -> None:
    """The leader's writes: the Ready status of every ScmProvider and GitRepository, and
    that of every PromotionStrategy left out as invalid (``problems``, by kind, namespace
    and name), while it still leads. ``objects(plural)``: the objects listed."""
    for plural, kind in READY_KINDS.items():
        for obj in objects(plural):
            if not leading():
                return
            meta = obj["metadata"]
            problem = problems.get((kind, meta["namespace"], meta["name"]))
            if plural == "promotionstrategies":
                if problem is not None:
                    writer.write(plural, obj, strategy_status(obj, None, problem))
            else:
                writer.write(plural, obj, ready_status(obj, problem))
