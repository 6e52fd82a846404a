"""The reader's seams: each per-feature part of an environment's snapshot is filled by one
function, called once per environment, and the snapshot carries what that function gave.

On the sandbox's guestbook strategy (a real repository, the embedded local SCM), dev's
promotion PR open and an approval gate on dev."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promoter.daemon import Runtime
from promoter.daemon.reading import reader as reader_module
from promoter.daemon.reading.reader import SnapshotReader
from promoter.engine import Snapshot
from scm_plugins.local import LocalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

STRATEGY = "guestbook"
APPROVAL = "gates: [{approval: {count: 1}}]"


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[tuple[Runtime, LocalScm]]:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(gitops.path, tmp_path / "state", environments={"dev": APPROVAL})
    provider = config.scm_providers[0]
    plugin = LocalScm(provider=provider, state_dir=str(config.state_path()))
    runtime = Runtime(config, plugins={provider.name: plugin})
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile(STRATEGY)  # opens dev's PR
    try:
        yield runtime, plugin
    finally:
        runtime.mirrors.get(runtime.config.repository("gitops")).close()
        plugin.close()


def read(runtime: Runtime, plugin: LocalScm, reader: SnapshotReader | None = None) -> Snapshot:
    strategy = runtime.config.strategy(STRATEGY)
    assert strategy is not None
    repo = runtime.config.repository("gitops")
    reader = reader or runtime.reconciler.reader(STRATEGY, plugin)
    return reader.read(strategy, repo, runtime.mirrors.fresh(repo))


def counted(
    calls: Counter[str], name: str, given: dict[str, list[Any]], fn: Callable[..., Any]
) -> Callable[..., Any]:
    """``fn``, counting its calls under ``name`` and keeping what it returns."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        found = fn(*args, **kwargs)
        given.setdefault(name, []).append(found)
        return found

    return wrapper


def test_each_part_is_filled_by_one_function_once_per_environment(
    runtime: tuple[Runtime, LocalScm], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, plugin = runtime
    calls: Counter[str] = Counter()
    given: dict[str, list[Any]] = {}
    reader = rt.reconciler.reader(STRATEGY, plugin)
    for name in ("read_approvals", "deployment_target"):
        wrapped = counted(calls, name, given, getattr(reader_module, name))
        monkeypatch.setattr(reader_module, name, wrapped)
    monkeypatch.setattr(
        reader.signatures, "read", counted(calls, "signatures", given, reader.signatures.read)
    )
    monkeypatch.setattr(
        reader.queue_detection,
        "read",
        counted(calls, "queueing", given, reader.queue_detection.read),
    )

    snapshot = read(rt, plugin, reader)

    count = len(ENVIRONMENTS)
    assert len(snapshot.environments) == count
    assert calls == {
        "read_approvals": count,
        "deployment_target": count,
        "signatures": count,
        "queueing": count,
    }
    parts = {
        "read_approvals": [env.approvals for env in snapshot.environments],
        "deployment_target": [env.deployment for env in snapshot.environments],
        "signatures": [env.signatures for env in snapshot.environments],
        "queueing": [env.queueing for env in snapshot.environments],
    }
    for name, found in parts.items():
        assert all(a is b for a, b in zip(found, given[name], strict=True)), name


def test_the_approvals_part_holds_the_reviews_only_where_a_gate_asks(
    runtime: tuple[Runtime, LocalScm],
) -> None:
    rt, plugin = runtime
    snapshot = read(rt, plugin)
    dev, *others = snapshot.environments
    assert dev.pull_request is not None
    assert (dev.approvals.reviews.value, dev.approvals.reviews.reason) == ((), None)
    assert all(env.approvals.reviews.value is None for env in others)
    assert all(env.approvals.reviews.reason is None for env in others)
    repo = rt.config.repository("gitops")
    plugin.approve_pull_request(repo=repo, number=dev.pull_request.number, user="ada")
    again = read(rt, plugin).environments[0].approvals.reviews
    assert again.value is not None and [r.user for r in again.value] == ["ada"]
