"""On Forgejo with webhooks and no ref polling: at most 4 plugin calls per environment.

Forgejo announces every push (the hydrator's and each merge's) with a ``push`` webhook
listing the commits it brought, so the promoter reads nothing about a new commit: its
statuses arrive by ``status`` webhook. What remains per environment is the PR, the
promoter's own check (written once, when decided), the re-read of the required gates
before the merge, and the merge; with a person merging prod, the PR and its two checks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.metrics import REGISTRY
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .conftest import FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo
from .forgejo_ci import HOOK_ENV, HOOK_SECRET, ForgejoCI, config_text
from .test_end_to_end import env_view, promoted

BUDGET = 4


def calls() -> dict[str, float]:
    """The Forgejo plugin's calls so far, per operation."""
    found: dict[str, float] = {}
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name == "promoter_scm_calls_total" and s.labels.get("provider") == "forgejo":
                found[s.labels["operation"]] = found.get(s.labels["operation"], 0) + s.value
    return found


@pytest.fixture
def robot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[ForgejoCI, GitOpsRepo]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_SECRET)
    gitops = GitOpsRepo.create(tmp_path)
    with FakeForgejo(token=TOKEN) as fake:
        fake.add_repository(FULL_NAME, gitops.path)
        manual = getattr(request, "param", False)
        text = config_text(gitops.path, tmp_path / "state", fake.url, prod_auto_merge=not manual)
        daemon = Daemon(parse_config(text))
        with TestClient(daemon.app) as client:
            client.runtime = daemon.runtime  # type: ignore[attr-defined]
            wait_for(lambda: env_view(client, "environment/prod").get("state") == "up-to-date")
            ci = ForgejoCI(client, fake)
            ci.announced.watch_reads(monkeypatch)
            for branch in ENVIRONMENTS:
                ci.status(gitops.tip(branch), "health")
            wait_for(lambda: daemon.runtime.queue.idle(), what="an idle queue")
            yield ci, gitops


def ready(client: TestClient) -> bool:
    return bool(env_view(client, "environment/prod")["state"] == "ready")


def promote(ci: ForgejoCI, gitops: GitOpsRepo, branch: str, change: str, *, manual: bool) -> None:
    """CI passes the proposed change, the PR is merged (by a person on manual prod), and
    CD reports the environment healthy."""
    env = wait_for(lambda: (e := env_view(ci.client, branch)).get("pullRequest") and e)
    ci.status(env["proposed"]["hydratedSha"], "ci")
    if manual and branch == "environment/prod":
        wait_for(partial(ready, ci.client), what="prod waiting for a person")
        ci.person_merges(env["pullRequest"]["number"], env["proposed"]["hydratedSha"])
    wait_for(partial(promoted, ci.client, branch, change), what=f"{branch} promoted")
    ci.status(gitops.tip(branch), "health")


def settle(ci: ForgejoCI) -> None:
    queue = ci.client.runtime.queue  # type: ignore[attr-defined]
    wait_for(lambda: queue.idle() and not queue.waiting(), what="an idle queue")


def hydrate(ci: ForgejoCI, gitops: GitOpsRepo) -> str:
    return ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0")


def promote_all(
    ci: ForgejoCI, gitops: GitOpsRepo, *, manual: bool, hydrated: Callable[[], str] | None = None
) -> None:
    change = hydrated() if hydrated else hydrate(ci, gitops)
    for branch in ENVIRONMENTS:
        promote(ci, gitops, branch, change, manual=manual)
    settle(ci)


def status_reads(ci: ForgejoCI, since: int) -> tuple[list[str], list[str]]:
    """The SHAs whose statuses were read since call ``since``: those read once a push had
    announced them, and those read before (or while) their push webhook came in."""
    reads = [
        (i, call.path.split("/")[-2])
        for i, call in enumerate(ci.fake.calls[since:], since)
        if call.method == "GET" and call.path.endswith("/statuses")
    ]
    early = ci.announced.early(reads)
    return [sha for i, sha in reads if i not in early], list(early.values())


@pytest.mark.parametrize("robot", [False, True], indirect=True, ids=["auto", "person-merges"])
def test_each_environment_costs_at_most_four_calls_and_no_new_commit_is_read(
    robot: tuple[ForgejoCI, GitOpsRepo], request: pytest.FixtureRequest
) -> None:
    ci, gitops = robot
    within_budget(ci, gitops, manual="person-merges" in request.node.name)


def test_a_read_begun_before_its_commits_webhook_is_early_when_answered_after_it(
    robot: tuple[ForgejoCI, GitOpsRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first push webhook's reconcile asks Forgejo, slow to answer, for the statuses
    of prod-next's new tip before that branch's webhook comes in, and is answered after
    it. That read is right; the budget still holds for everything else."""
    ci, gitops = robot
    plugin = ci.client.runtime.plugins["forgejo"]  # type: ignore[attr-defined]
    answer = plugin.get_commit_statuses

    def slowly(**arguments: Any) -> Any:
        time.sleep(0.3)
        return answer(**arguments)

    monkeypatch.setattr(plugin, "get_commit_statuses", slowly)
    begun, reading, target = threading.Event(), ci.announced.reading, [""]

    @contextmanager
    def watched(sha: str) -> Iterator[None]:
        with reading(sha):
            if sha == target[0]:
                begun.set()
            yield

    monkeypatch.setattr(ci.announced, "reading", watched)

    def holding(branch: str) -> None:
        """prod-next's webhook held until the daemon reads that branch's new tip."""
        if branch == "main":
            target[0] = gitops.tip("environment/prod-next")
        elif branch == "environment/prod-next":
            assert begun.wait(10), "the daemon never read prod-next's new tip"

    def racing() -> str:
        return ci.hydrate(gitops, "1.1.0", "Bump guestbook to 1.1.0", announcing=holding)

    within_budget(ci, gitops, manual=False, hydrated=racing)


def within_budget(
    ci: ForgejoCI, gitops: GitOpsRepo, *, manual: bool, hydrated: Callable[[], str] | None = None
) -> None:
    before, since = calls(), len(ci.fake.calls)
    promote_all(ci, gitops, manual=manual, hydrated=hydrated)
    used = {op: n - before.get(op, 0) for op, n in calls().items() if n - before.get(op, 0)}
    after, early = status_reads(ci, since)
    assert used.get("get_commit_statuses", 0) == len(after) + len(early), (used, after, early)
    # A commit read before its webhook came is read once, and is one the hydrator pushed.
    assert len(early) == len(set(early)), early
    assert set(early) <= {gitops.tip(f"{b}-next") for b in ENVIRONMENTS}, early
    assert sum(used.values()) - len(early) <= BUDGET * len(ENVIRONMENTS), (used, early)
    # Once announced, a commit is read only by the pre-merge re-read of a proposed head
    # the promoter merges (none for a person's merge): neither a proposed head's statuses
    # nor a merge commit's are read otherwise.
    merged_by_promoter = len(ENVIRONMENTS) - (1 if manual else 0)
    assert len(after) == len(set(after)) == merged_by_promoter, (after, early)
    statuses = used.get("set_commit_status", 0)
    assert statuses == (4 if manual else 2), used  # no pending write followed by success


def test_a_merged_proposal_is_not_read_again_while_the_next_environments_wait(
    robot: tuple[ForgejoCI, GitOpsRepo],
) -> None:
    """dev's proposed commit is merged: its statuses gate nothing any more, so they are
    kept past the status cache's TTL and through a resync while staging and prod take
    their time."""
    ci, gitops = robot
    runtime = ci.client.runtime  # type: ignore[attr-defined]
    cache = runtime.status_cache
    passed = [0.0]
    cache.clock = lambda: time.monotonic() + passed[0]
    since = len(ci.fake.calls)
    change = hydrate(ci, gitops)
    dev_head = gitops.tip("environment/dev-next")
    promote(ci, gitops, "environment/dev", change, manual=False)
    settle(ci)
    passed[0] = cache.ttl + 1  # staging waits for its CI longer than the TTL
    runtime.scheduler.resync()  # a periodic resync meanwhile: the strategy waits
    settle(ci)
    for branch in ENVIRONMENTS[1:]:
        promote(ci, gitops, branch, change, manual=False)
    settle(ci)
    after, early = status_reads(ci, since)
    # Read once: by the re-read before its merge (or before its push webhook came).
    assert (after + early).count(dev_head) == 1, (after, early)
    # What waits is read again past the TTL: staging's proposed commit, announced before
    # dev's merge, is read besides its own re-read before the merge.
    assert (after + early).count(gitops.tip("environment/staging-next")) >= 2, (after, early)
