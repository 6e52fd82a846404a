"""List + watch of one resource into a local cache (an informer, in client-go's words).

The watch resumes from the last resourceVersion seen (events and bookmarks); when the
API server answers ``410 Gone`` (history compacted) the watcher lists again and reports
every difference, so nothing is missed. Errors back off exponentially, capped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from promoter.kube.client.api import Kube, KubeError, Obj

log = logging.getLogger("promoter.kube.watcher")

OnChange = Callable[[str, Obj, Obj | None], None]
"""(event type ADDED/MODIFIED/DELETED, the object, the previous version or None)."""


class Source(Protocol):
    """Where a resource is listed and watched from: ``Kube`` for the custom resources,
    ``promoter.kube.shards.leases.LeaseSource`` for a group's Leases."""

    def list(self, plural: str, namespace: str | None) -> Obj: ...

    def open_watch(
        self, plural: str, namespace: str | None, resource_version: str, timeout: int
    ) -> Any: ...


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _rv(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))


class Watcher:
    """Keeps ``cache`` equal to the API server's objects of one resource; thread-safe reads."""

    def __init__(
        self,
        kube: Source,
        plural: str,
        namespace: str | None,
        on_change: OnChange,
        *,
        timeout: int = 60,
        initial_backoff: float = 0.2,
        max_backoff: float = 30.0,
        on_synced: Callable[[], None] = lambda: None,
        on_error: Callable[[KubeError], None] = lambda exc: None,
    ) -> None:
        self.kube = kube
        self.plural = plural
        self.namespace = namespace
        self.on_change = on_change
        # called after each listing's events: whoever waits for every watcher to be
        # synced learns it then (a listing may bring no event at all)
        self.on_synced = on_synced
        self.on_error = on_error
        """Told of every error of a list or a watch (the shards' ``Outage``)."""
        self.timeout = timeout
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.cache: dict[tuple[str, str], Obj] = {}
        self.resource_version: str | None = None
        self.relists = 0
        self.synced = threading.Event()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{plural}", daemon=True)

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self.cache.values())

    def snapshot(self) -> dict[tuple[str, str], Obj]:
        """(namespace, name) -> object, copied under the lock."""
        with self._lock:
            return dict(self.cache)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # already closed: nothing to interrupt
                log.debug("watch already closed", extra={"resource": self.plural})
        self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = self.initial_backoff
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._relist()
                self._watch_once()
                backoff = self.initial_backoff
            except KubeError as exc:
                if self._stop.is_set():
                    return
                self.on_error(exc)
                if exc.status == 410:
                    self.resource_version = None
                    continue
                log.warning(
                    "watch failed, backing off",
                    extra={"resource": self.plural, "error": str(exc), "backoff": backoff},
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)
            except Exception:  # a bug in a callback must not end the watch
                log.exception("watch callback failed", extra={"resource": self.plural})
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)

    def _relist(self) -> None:
        listed = self.kube.list(self.plural, self.namespace)
        fresh = {_key(obj): obj for obj in listed.get("items", [])}
        with self._lock:
            old, self.cache = self.cache, dict(fresh)
        self.resource_version = str(listed.get("metadata", {}).get("resourceVersion", ""))
        self.relists += 1
        log.info("listed", extra={"resource": self.plural, "count": len(fresh)})
        for key, obj in old.items():
            if key not in fresh:
                self.on_change("DELETED", obj, obj)
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self.on_change("ADDED", obj, None)
            elif _rv(before) != _rv(obj):
                self.on_change("MODIFIED", obj, before)
        self.synced.set()
        self.on_synced()

    def _watch_once(self) -> None:
        assert self.resource_version is not None
        self._response = self.kube.open_watch(
            self.plural, self.namespace, self.resource_version, self.timeout
        )
        try:
            for event in Kube.events(self._response):
                if self._stop.is_set():
                    return
                self._apply(event)
        finally:
            self._response = None

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            raise KubeError(f"watch {self.plural}: {obj.get('message', 'error')}", code)
        if kind == "BOOKMARK":
            self.resource_version = _rv(obj) or self.resource_version
            return
        key = _key(obj)
        with self._lock:
            before = self.cache.get(key)
            if kind == "DELETED":
                self.cache.pop(key, None)
            else:
                self.cache[key] = obj
        self.resource_version = _rv(obj) or self.resource_version
        self.on_change(str(kind), obj, before)
