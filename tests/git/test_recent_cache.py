"""The cache of commit facts that keeps what was used lately (``caches.Recent``), and the
mirror that sizes it by its refs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promoter.git import GitMirror
from promoter.git.caches import Recent
from tests.gitrepo import GitSandbox


def test_a_miss_is_none_and_a_hit_in_the_old_generation_is_young_again() -> None:
    cache: Recent[str, int] = Recent(2)
    assert cache.get("a") is None
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)  # the young generation was full: a and b are the old one now
    assert cache.get("a") == 1  # young again
    cache.put("d", 4)  # young was full (c, a): b is let go
    assert (cache.get("b"), cache.get("a"), cache.get("c"), cache.get("d")) == (None, 1, 3, 4)
    assert cache.put("a", 5) == 5 and cache.get("a") == 5
    cache.clear()
    assert len(cache) == 0 and "a" not in cache


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(1, 8),
    every=st.integers(1, 8),
    keys=st.lists(st.integers(0, 1000), max_size=300),
)
def test_an_entry_used_once_every_limit_puts_stays_and_the_cache_holds_at_most_twice_limit(
    limit: int, every: int, keys: list[int]
) -> None:
    cache: Recent[int, int] = Recent(limit)
    cache.put(-1, -1)
    for n, key in enumerate(keys):
        cache.put(key, key)
        assert len(cache) <= 2 * limit
        if every <= limit and n % every == every - 1:
            assert cache.get(-1) == -1
    if every <= limit:
        assert cache.get(-1) == -1


def test_a_mirror_keeps_the_tips_of_all_its_refs_cached_however_many_there_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("promoter.git.remote_copy.FACTS", 4)
    remote = GitSandbox(tmp_path)
    remote.commit_dry({"values.yaml": "v: 1\n"}, "Dry")
    for i in range(12):
        remote.commit(f"environment/e{i}", {"a.yaml": f"{i}\n"})
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.refresh()
        tips = list(mirror.refs().values())
        assert mirror._tree_of.limit == 2 * len(tips)
        for round_ in range(3):
            for i in range(12):
                remote.commit(f"environment/e{i}", {"a.yaml": f"{i} {round_}\n"})
            mirror.refresh()
            tips = list(mirror.refs().values())
            assert all(tip in mirror._tree_of and tip in mirror._commit_time for tip in tips)
            assert len(mirror._tree_of) <= 4 * len(tips)


def test_a_reading_of_the_refs_keeps_the_objects_of_the_refs_that_did_not_move(
    tmp_path: Path,
) -> None:
    """A fetch reads every ref again: the names, SHAs and facts of those that did not
    move stay the objects already held; moved, added and deleted refs read as git says."""
    remote = GitSandbox(tmp_path)
    remote.commit_dry({"values.yaml": "v: 1\n"}, "Dry")
    for name in ("b", "d", "f", "h"):
        remote.commit(f"environment/{name}", {"a.yaml": f"{name}\n"})
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.refresh()
        held = dict(mirror._cached_refs().items())
        names = {ref: ref for ref in held}
        facts = {
            sha: (mirror._tree_of.get(sha), mirror._commit_time.get(sha)) for sha in held.values()
        }
        remote.commit("environment/d", {"a.yaml": "d moved\n"})
        remote.commit("environment/c", {"a.yaml": "c\n"})  # sorts between two that stay
        remote.commit("environment/i", {"a.yaml": "i\n"})  # after the last one read
        remote.delete_branch("environment/f")
        assert mirror.refresh()
        read = mirror._cached_refs()
        truth = {
            ref: remote.branch_sha(ref.removeprefix("refs/heads/"))
            for ref in read
            if ref.startswith("refs/heads/")
        }
        assert {r: s for r, s in read.items() if r in truth} == truth
        assert "refs/heads/environment/f" not in read
        for ref in ("refs/heads/environment/b", "refs/heads/environment/h"):
            [key] = [k for k in read if k == ref]
            sha = read[ref]
            assert key is names[ref] and sha is held[ref]
            assert mirror._tree_of.get(sha) is facts[sha][0]
            assert mirror._commit_time.get(sha) is facts[sha][1]
        moved = read["refs/heads/environment/d"]
        assert moved != held["refs/heads/environment/d"]
        assert mirror._tree_of.get(moved) is not None and mirror._commit_time.get(moved)
        assert mirror.tree_sha(moved) == remote.git("rev-parse", f"{moved}^{{tree}}").strip()
