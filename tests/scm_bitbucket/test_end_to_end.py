"""End to end on Bitbucket Cloud and Data Center: the daemon drives the built-in plugin over
the fake, with real git merges and the fake's signed webhooks.

Each test runs once per product. Failure paths first: a forged delivery, a head that moves
right before the merge, a rate limit; then a promotion dev -> staging -> prod, a revert,
and four eyes on an approval gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.config.loader import parse_config
from promoter.metrics import REGISTRY
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .bitbucket_ci import OLD_HOOK_SECRET, PRODUCTS, BitbucketCI, config_text, environ
from .conftest import PASSWORD, PROJECT_REPO, TOKEN, USERNAME, WORKSPACE_REPO
from .fake_cloud import FakeCloud
from .fake_datacenter import FakeDataCenter

DEV, STAGING, PROD = ENVIRONMENTS


def env_view(client: TestClient, branch: str) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
    return found


def promoted(client: TestClient, branch: str, change: str) -> bool:
    return (env_view(client, branch).get("active") or {}).get("drySha") == change


def calls(provider: str, **labels: str) -> float:
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            wanted = {"provider": provider, **labels}
            if sample.name == "promoter_scm_calls_total" and all(
                sample.labels.get(k) == v for k, v in wanted.items()
            ):
                total += sample.value
    return total


class Harness:
    def __init__(self, product: str, ci: BitbucketCI, gitops: GitOpsRepo) -> None:
        self.product, self.ci, self.gitops = product, ci, gitops
        self.client, self.fake = ci.client, ci.fake
        self.full_name = WORKSPACE_REPO if product == "cloud" else PROJECT_REPO

    def pulls(self, base: str) -> list[dict[str, Any]]:
        key = "destination" if self.product == "cloud" else "toRef"
        return [
            p
            for p in self.fake.pulls_of(self.full_name)
            if (p[key]["branch"]["name"] if self.product == "cloud" else p[key]["displayId"])
            == base
        ]

    def open_pr(self, branch: str) -> dict[str, Any]:
        return wait_for(
            lambda: (e := env_view(self.client, branch)).get("pullRequest") and e,
            what=f"the pull request into {branch}",
        )

    def promote(self, branch: str, change: str, health: str = "success") -> None:
        env = self.open_pr(branch)
        self.ci.status(env["proposed"]["hydratedSha"], "ci")
        wait_for(partial(promoted, self.client, branch, change), what=f"{branch} promoted")
        self.ci.status(self.gitops.tip(branch), "health", health)


@pytest.fixture(params=PRODUCTS)
def harness(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    yield from _harness(request.param, tmp_path, monkeypatch, "", "")


def _harness(
    product: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, staging: str, prod: str
) -> Iterator[Harness]:
    for name, value in environ().items():
        monkeypatch.setenv(name, value)
    gitops = GitOpsRepo.create(tmp_path)
    fake: FakeCloud | FakeDataCenter
    if product == "cloud":
        fake = FakeCloud(username=USERNAME, password=PASSWORD)
        fake.add_repository(WORKSPACE_REPO, gitops.path)
        url = fake.url
    else:
        fake = FakeDataCenter(token=TOKEN)
        fake.add_repository(PROJECT_REPO, gitops.path)
        url = fake.base_url
    with fake:
        text = config_text(
            product, gitops.path, tmp_path / "state", url, staging=staging, prod=prod
        )
        daemon = Daemon(parse_config(text))
        with TestClient(daemon.app) as client:
            ci = BitbucketCI(product, client, fake)
            wait_for(lambda: env_view(client, PROD).get("state") == "up-to-date")
            for branch in ENVIRONMENTS:
                ci.status(gitops.tip(branch), "health")
            yield Harness(product, ci, gitops)


def test_a_forged_or_unsigned_delivery_is_refused_and_moves_nothing(harness: Harness) -> None:
    h = harness
    event, payload = h.ci.push_payload(DEV + "-next", h.gitops.tip(DEV), "a" * 40)
    assert h.ci.deliver(event, payload, secret="not-the-secret") == 401
    raw = b'{"push": {"changes": []}}'
    unsigned = h.client.post(
        f"/webhooks/bitbucket-{h.product}", content=raw, headers={"X-Event-Key": event}
    )
    assert unsigned.status_code == 401
    # The secret being rotated out still signs: both are accepted while they overlap.
    assert h.ci.deliver(event, payload, secret=OLD_HOOK_SECRET) == 202
    assert h.pulls(DEV) == []


def test_a_head_that_moves_right_before_the_merge_is_never_merged(harness: Harness) -> None:
    h = harness
    first = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    env = h.open_pr(DEV)
    old_head = env["proposed"]["hydratedSha"]
    moved: list[str] = []
    reads = rf"/commit/{old_head}/statuses$|/commits/{old_head}/builds$"

    def hydrator_pushes_during_the_pre_merge_read(method: str, path: str, status: int) -> None:
        if method == "GET" and re.search(reads, path) and not moved:
            moved.append(h.gitops.change("1.2.0", "Bump guestbook to 1.2.0"))

    h.fake.on_handled = hydrator_pushes_during_the_pre_merge_read
    h.ci.status(old_head, "ci")
    wait_for(lambda: bool(moved), what="the merge's re-read of the gates")
    new_head = h.gitops.tip(DEV + "-next")
    wait_for(
        lambda: (env_view(h.client, DEV).get("pullRequest") or {}).get("headSha") == new_head,
        what="the pull request at its new head",
    )
    # The new head's CI has not passed: nothing was merged, neither head.
    assert not promoted(h.client, DEV, first) and not promoted(h.client, DEV, moved[0])
    assert [p["state"] for p in h.pulls(DEV)] == ["OPEN"]
    h.fake.on_handled = None
    h.ci.status(new_head, "ci")
    wait_for(partial(promoted, h.client, DEV, moved[0]), what="dev at the new head")
    parents = git(h.gitops.path, "rev-list", "--parents", "-n1", DEV).split()[1:]
    assert parents[-1] == new_head and old_head not in parents


def test_a_rate_limit_is_waited_out_once_not_retried_in_a_loop(harness: Harness) -> None:
    h = harness
    provider = f"bitbucket-{h.product}"
    limited_before = calls(provider, outcome="rate_limited")
    h.fake.limit_from_next(0.5)
    change = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    h.promote(DEV, change)
    refused = [c for c in h.fake.calls if c.status == 429]
    assert len(refused) == 1, [(c.method, c.path) for c in refused]
    after = [c.at for c in h.fake.calls if c.at > refused[0].at]
    assert after and after[0] - refused[0].at >= 0.9, "a call went out before the wait"
    assert calls(provider, outcome="rate_limited") == limited_before + 1


def test_a_change_goes_dev_to_staging_to_prod_through_bitbucket_pull_requests(
    harness: Harness,
) -> None:
    h = harness
    change = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    for branch in ENVIRONMENTS:
        before = h.gitops.tip(branch)
        h.promote(branch, change)
        [pr] = h.pulls(branch)
        assert pr["state"] == "MERGED"
        parents = git(h.gitops.path, "rev-list", "--parents", "-n1", branch).split()[1:]
        assert parents == [before, h.gitops.tip(f"{branch}-next")]
    wait_for(lambda: env_view(h.client, PROD)["state"] == "up-to-date", what="prod up to date")
    checks = _checks(h, h.gitops.tip(STAGING + "-next"))
    assert checks.get("promoter/previous-environment") in ("SUCCESSFUL", None)


def _checks(h: Harness, sha: str) -> dict[str, str]:
    """The promoter's checks on a commit, as Bitbucket shows them."""
    repo = h.fake.repos[h.full_name]
    kept = getattr(repo, "statuses", None) if h.product == "cloud" else repo.builds
    return {k: v["state"] for k, v in (kept or {}).get(sha, {}).items()}


@pytest.fixture(params=PRODUCTS)
def reverting(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    revert = ", autoRevert: {enabled: true, settleTime: 0s, autoMerge: true}"
    yield from _harness(request.param, tmp_path, monkeypatch, revert, "")


def test_a_bad_change_is_reverted_through_a_revert_pull_request(reverting: Harness) -> None:
    h = reverting
    good = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    for branch in (DEV, STAGING):
        h.promote(branch, good)
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    h.promote(DEV, bad)
    h.promote(STAGING, bad, health="failure")
    wait_for(partial(promoted, h.client, STAGING, good), what="staging reverted to the good one")
    reverts = [p for p in h.pulls(STAGING) if "revert" in _head_branch(h, p)]
    assert [p["state"] for p in reverts] == ["MERGED"]


def _head_branch(h: Harness, pr: dict[str, Any]) -> str:
    if h.product == "cloud":
        return str(pr["source"]["branch"]["name"])
    return str(pr["fromRef"]["displayId"])


@pytest.fixture(params=PRODUCTS)
def approving(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    yield from _harness(
        request.param, tmp_path, monkeypatch, "", ", gates: [{approval: {count: 1}}]"
    )


def test_neither_the_opener_nor_the_author_of_the_change_approves_it(approving: Harness) -> None:
    h = approving
    change = h.gitops.change("1.1.0", "Bump guestbook to 1.1.0")  # by Test Author <author@...>
    for branch in (DEV, STAGING):
        h.promote(branch, change)
    env = h.open_pr(PROD)
    h.ci.status(env["proposed"]["hydratedSha"], "ci")
    number = env["pullRequest"]["number"]
    approve = _approver(h)
    approve(number, "promoter-bot")
    approve(number, "author")
    h.client.post("/api/v1/refresh", json={"strategy": "guestbook"})
    expected = "not counted: author wrote a change being promoted; promoter-bot opened"
    wait_for(
        lambda: expected in env_view(h.client, PROD)["reason"],
        what="prod to leave out the opener's and the author's approvals",
    )
    assert not promoted(h.client, PROD, change)
    approve(number, "grace")
    h.client.post("/api/v1/refresh", json={"strategy": "guestbook"})
    wait_for(partial(promoted, h.client, PROD, change), what="prod promoted")


def _approver(h: Harness) -> Any:
    fake = h.fake
    if isinstance(fake, FakeCloud):
        return partial(fake.approve, h.full_name)
    return partial(fake.review, h.full_name)
