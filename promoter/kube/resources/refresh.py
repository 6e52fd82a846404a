"""Hands webhooks to the leader (or, sharded, to an owner that could not be reached over
HTTP): the replica annotates the strategy.

The annotation ``promoter.argoproj.io/refreshedAt`` (a timestamp) changes the object,
the leader's watch sees it and reconciles. Patches run on a thread of their own, never
in a request, and keys arriving together are written once. A replica taking a shard
over reads the strategies annotated lately first (``recently_refreshed``): their owner
may have been dead when the webhook came.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from promoter.kube.client.api import Kube, KubeError
from promoter.kube.resources.config_source import config_name, split_name
from promoter.kube.resources.specs import REFRESH_ANNOTATION

log = logging.getLogger("promoter.kube.refresh")


class RefreshForwarder:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.forwarded = 0
        self._pending: dict[str, None] = {}
        """Keys to annotate, in the order they were given (the most urgent first)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._written = threading.Event()
        """Set while every key given has been annotated (or failed, and was logged)."""
        self._written.set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="refresh-forwarder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop once every key given so far is annotated (at most 10 s)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def forward(self, keys: list[str]) -> None:
        if not keys:
            return
        with self._lock:
            self._pending.update(dict.fromkeys(keys))
            self._written.clear()
        self._wake.set()

    def flush(self, timeout: float) -> bool:
        """Wait until every key given so far is annotated; False after ``timeout``."""
        return self._written.wait(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                keys, self._pending = list(self._pending), {}
            for key in keys:
                self._annotate(key)
            with self._lock:
                if not self._pending:
                    self._written.set()
                    if self._stop.is_set():
                        return

    def _annotate(self, key: str) -> None:
        namespace, name = split_name(key)
        stamp = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        try:
            self.kube.annotate("promotionstrategies", namespace, name, {REFRESH_ANNOTATION: stamp})
            self.forwarded += 1
            log.info("refresh forwarded to the leader", extra={"strategy": key})
        except KubeError as exc:
            log.warning("refresh not forwarded", extra={"strategy": key, "error": str(exc)})


def recently_refreshed(objects: Iterable[dict[str, Any]], *, within: float) -> set[str]:
    """The strategies among ``objects`` annotated within the last ``within`` seconds."""
    horizon = datetime.now(UTC) - timedelta(seconds=within)
    found = set()
    for obj in objects:
        meta = obj.get("metadata", {})
        stamp = (meta.get("annotations") or {}).get(REFRESH_ANNOTATION)
        try:
            when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            continue
        if when >= horizon:
            found.add(config_name(meta["namespace"], meta["name"]))
    return found
