"""The watcher resumes from its resourceVersion, and relists on 410 Gone missing nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from promoter.kube.client.watcher import Watcher
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


def test_a_watcher_backs_off_while_the_api_server_fails_and_recovers_after(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        cluster.fake.broken = True
        watcher = Watcher(
            cluster.kube(), "promotionstrategies", NS, Seen(), initial_backoff=0.05, max_backoff=0.2
        )
        watcher.start()
        try:
            time.sleep(1.0)
            attempts = cluster.fake.requests
            # 0.05 + 0.1 + 0.2 + 0.2 + ... : about seven tries in a second, not hundreds
            assert 3 <= attempts <= 10, attempts
            assert not watcher.synced.is_set()
            cluster.fake.broken = False
            wait_until(watcher.synced.is_set, what="the list after the API server recovered")
        finally:
            watcher.stop()


def test_bookmarks_move_the_resource_version_without_events(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        watcher = Watcher(cluster.kube(), "promotionstrategies", NS, Seen(), timeout=5)
        watcher.start()
        try:
            wait_until(watcher.synced.is_set, what="the first list")
            cluster.create(
                "gitrepositories", "other", {"url": "/x", "scmProviderRef": {"name": "p"}}
            )
            latest = str(cluster.fake.rv)
            wait_until(lambda: watcher.resource_version == latest, what="a bookmark")
            assert watcher.cache == {}
        finally:
            watcher.stop()
