"""Lists of custom resources are read in pages, all from one snapshot, as a real API
server serves them; a snapshot compacted away before the last page is listed again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promoter.kube.client.api import LIST_PAGE, Kube, KubeError
from promoter.kube.client.watcher import Watcher
from tests.kube.cluster import GROUP, NS, Cluster, fake_cluster, wait_until

PLURAL = "promotionstrategies"
SPEC = {"gitRepositoryRef": {"name": "gitops"}, "environments": [{"branch": "environment/dev"}]}
COUNT = 2 * LIST_PAGE + 234


def fleet(cluster: Cluster, count: int = COUNT) -> None:
    cluster.fake.preload(
        [
            {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "PromotionStrategy",
                "metadata": {"name": f"app-{i:04d}", "namespace": NS},
                "spec": SPEC,
            }
            for i in range(count)
        ]
    )


class AfterFirstPage(Kube):
    """A client that lets ``meanwhile`` run once, after the first page of a list."""

    def __init__(self, kube: Kube, meanwhile: Any) -> None:
        super().__init__(kube.client)
        self.meanwhile = meanwhile
        self.pages = 0

    def _list_page(self, plural: str, namespace: str | None, page: int, token: str) -> Any:
        listed = super()._list_page(plural, namespace, page, token)
        self.pages += 1
        if self.pages == 1:
            self.meanwhile()
        return listed


def names(listed: dict[str, Any]) -> list[str]:
    return [o["metadata"]["name"] for o in listed["items"]]


def changes(cluster: Cluster) -> None:
    """A strategy added (last by name), one deleted and one changed in later pages."""
    cluster.create(PLURAL, "zz-added", SPEC)
    cluster.kube().custom.delete_namespaced_custom_object(GROUP, "v1alpha1", NS, PLURAL, "app-0700")
    cluster.patch_spec(PLURAL, "app-1100", {**SPEC, "dryBranch": "trunk"})


def test_a_list_is_read_in_pages_from_the_snapshot_of_its_first(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster)
        kube = AfterFirstPage(cluster.kube(), lambda: changes(cluster))
        first_rv = cluster.fake.rv
        listed = kube.list(PLURAL, NS)
        assert cluster.fake.lists[PLURAL] == 3  # 500, 500 and 234
        assert names(listed) == [f"app-{i:04d}" for i in range(COUNT)]
        assert listed["metadata"]["resourceVersion"] == str(first_rv)
        changed = next(o for o in listed["items"] if o["metadata"]["name"] == "app-1100")
        assert "dryBranch" not in changed["spec"]  # as it was when the list began
        assert "continue" not in listed["metadata"]
        assert not cluster.fake.snapshots  # let go once its last page is read


def test_a_watch_from_a_paged_lists_version_sees_what_changed_while_it_was_read(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster)
        kube = AfterFirstPage(cluster.kube(), lambda: changes(cluster))
        watcher = Watcher(kube, PLURAL, NS, lambda *event: None, timeout=5)
        watcher.start()
        try:
            wait_until(
                lambda: (NS, "zz-added") in watcher.cache and (NS, "app-0700") not in watcher.cache,
                what="the changes made while the list was read",
            )
            assert len(watcher.cache) == COUNT
            assert watcher.cache[(NS, "app-1100")]["spec"]["dryBranch"] == "trunk"
            assert watcher.relists == 1
        finally:
            watcher.stop()


def test_a_list_whose_snapshot_is_compacted_before_its_last_page_is_listed_again_whole(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster)

        def compacted() -> None:
            changes(cluster)
            cluster.fake.expire()  # the next page's continue token is 410 Expired

        kube = AfterFirstPage(cluster.kube(), compacted)
        listed = kube.list(PLURAL, NS)
        assert cluster.fake.lists[PLURAL] == 3  # a page, the 410, the whole list
        assert len(listed["items"]) == COUNT  # one added, one deleted: as it is now
        assert "zz-added" in names(listed) and "app-0700" not in names(listed)
        assert listed["metadata"]["resourceVersion"] == str(cluster.fake.rv)


def test_a_list_whose_continue_never_moves_on_fails_instead_of_looping(tmp_path: Path) -> None:
    """An API server (or a proxy before it) answering every page with the same continue
    token: the list fails, saying so, rather than asking for ever."""
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, 3)
        kube = cluster.kube()
        first = kube._list_page(PLURAL, NS, 2, "")
        stuck = Kube(kube.client)
        stuck._list_page = lambda *args: first  # type: ignore[method-assign]
        with pytest.raises(KubeError, match="the same continue twice"):
            stuck.list(PLURAL, NS, page=2)


def test_the_api_server_stand_in_refuses_a_continue_token_past_compaction(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, 3)
        first = cluster.kube().custom.list_namespaced_custom_object(
            GROUP, "v1alpha1", NS, PLURAL, limit=2
        )
        token = first["metadata"]["continue"]
        assert first["metadata"]["remainingItemCount"] == 1
        cluster.fake.expire()
        with pytest.raises(KubeError) as refused:
            cluster.kube()._list_page(PLURAL, NS, 2, token)
        assert refused.value.status == 410
        answered = json.loads(refused.value.__cause__.body)  # type: ignore[union-attr]
        assert answered["reason"] == "Expired"
        assert answered["message"].startswith("The provided continue parameter is too old")
        with pytest.raises(KubeError) as malformed:
            cluster.kube()._list_page(PLURAL, NS, 2, "not-a-token")
        assert malformed.value.status == 400  # as the API server refuses a key it cannot read
