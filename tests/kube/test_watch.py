"""The watcher resumes from its resourceVersion, and relists on 410 Gone missing nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from promoter.kube.watcher import Watcher
from tests.kube.cluster import NS, fake_cluster, wait_until

SPEC = {"gitRepositoryRef": {"name": "gitops"}, "environments": [{"branch": "environment/dev"}]}


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, obj: dict[str, Any], before: dict[str, Any] | None) -> None:
        with self.lock:
            self.events.append((kind, obj["metadata"]["name"]))


def test_a_watch_that_ends_with_410_relists_and_misses_nothing(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        seen = Seen()
        watcher = Watcher(cluster.kube(), "promotionstrategies", NS, seen, timeout=5)
        cluster.create("promotionstrategies", "kept", SPEC)
        cluster.create("promotionstrategies", "removed", SPEC)
        watcher.start()
        try:
            wait_until(lambda: len(watcher.cache) == 2, what="the first list")
            cluster.fake.hold()  # the watch hears nothing from here on ...
            cluster.create("promotionstrategies", "added", SPEC)
            cluster.patch_spec("promotionstrategies", "kept", {**SPEC, "dryBranch": "trunk"})
            cluster.kube().custom.delete_namespaced_custom_object(
                "promoter.argoproj.io", "v1alpha1", NS, "promotionstrategies", "removed"
            )
            cluster.fake.expire()  # ... and its history is compacted: resuming gets 410
            wait_until(lambda: watcher.relists == 2, what="a relist after 410")
            assert sorted(name for _, name in watcher.cache) == ["added", "kept"]
            assert watcher.cache[(NS, "kept")]["spec"]["dryBranch"] == "trunk"
            assert ("ADDED", "added") in seen.events
            assert ("MODIFIED", "kept") in seen.events
            assert ("DELETED", "removed") in seen.events
        finally:
            watcher.stop()


def test_a_watch_resumes_from_its_resource_version_without_listing_again(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        seen = Seen()
        watcher = Watcher(cluster.kube(), "promotionstrategies", NS, seen, timeout=1)
        watcher.start()
        try:
            wait_until(watcher.synced.is_set, what="the first list")
            cluster.create("promotionstrategies", "one", SPEC)
            wait_until(lambda: ("ADDED", "one") in seen.events, what="the event")
            watches = cluster.fake.watches
            wait_until(lambda: cluster.fake.watches > watches, what="the watch to time out")
            cluster.create("promotionstrategies", "two", SPEC)
            wait_until(lambda: ("ADDED", "two") in seen.events, what="the next event")
            assert watcher.relists == 1
            assert seen.events.count(("ADDED", "one")) == 1
        finally:
            watcher.stop()


def test_a_watcher_backs_off_while_the_api_server_is_unreachable(tmp_path: Path) -> None:
    from promoter.kube.api import Kube, loopback_client
    from promoter.loopback import free_port

    seen = Seen()
    kube = Kube(loopback_client(f"http://127.0.0.1:{free_port()}"))
    watcher = Watcher(kube, "promotionstrategies", NS, seen, initial_backoff=0.05, max_backoff=0.2)
    watcher.start()
    try:
        wait_until(lambda: watcher._stop.wait(0.8) or True)
        assert not watcher.synced.is_set()
        assert watcher._thread.is_alive()
    finally:
        watcher.stop()
