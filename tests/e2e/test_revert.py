"""Reverts, holds and manual operations end to end on real git and the local SCM."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter import markup
from promoter.cli.sandbox import git
from promoter.config import Config
from promoter.state.ledger import LEDGER_REF
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

DEV, STAGING, PROD = ENVIRONMENTS
AUTO_REVERT = "{enabled: true, settleTime: 0.3s, autoMerge: true}"


class Harness:
    def __init__(self, gitops: GitOpsRepo, config: Config) -> None:
        self.gitops = gitops
        self.config = config
        self.daemon = Daemon(config)
        self.runtime = self.daemon.runtime
        self.client = TestClient(self.daemon.app)
        self.done: set[tuple[str, str]] = set()

    def __enter__(self) -> Harness:
        self.client.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.__exit__(*exc)

    def env(self, branch: str) -> dict[str, Any]:
        view = self.client.get("/api/v1/strategies/guestbook").json()
        return next(e for e in view["environments"] if e["branch"] == branch)

    def active(self, branch: str) -> str | None:
        return (self.env(branch).get("active") or {}).get("drySha")

    def status(self, sha: str, key: str, phase: str = "success") -> None:
        if (sha, key + phase) in self.done:
            return
        self.done.add((sha, key + phase))
        response = self.client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": key, "phase": phase},
        )
        assert response.status_code == 201, response.text

    def promote(self, change: str, branches: list[str], *, health: str = "success") -> None:
        """Play CI and health for ``branches`` in order until each runs ``change``."""
        for branch in branches:
            env = wait_for(
                lambda b=branch: (e := self.env(b))["pullRequest"] and e,
                what=f"a PR for {branch}",
            )
            self.status(env["proposed"]["hydratedSha"], "ci")
            wait_for(lambda b=branch: self.active(b) == change, what=f"{branch} on the change")
            phase = health if branch == branches[-1] else "success"
            self.status(self.gitops.tip(branch), "health", phase)

    def operate(self, operation: str, **body: Any) -> Any:
        return self.client.post(f"/api/v1/strategies/guestbook/{operation}", json=body)


@pytest.fixture
def harness(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Harness]:
    config = local_config(gitops.path, tmp_path / "state", auto_revert=AUTO_REVERT)
    with Harness(gitops, config) as h:
        wait_for(lambda: h.env(PROD)["state"] == "up-to-date", what="a first reconcile")
        for branch in ENVIRONMENTS:
            h.status(gitops.tip(branch), "health")
        good = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        h.promote(good, ENVIRONMENTS)
        wait_for(lambda: h.env(PROD)["lastHealthy"], what="prod recorded healthy")
        h.good = good  # type: ignore[attr-defined]
        yield h


def reverted(h: Harness, bad: str) -> dict[str, Any]:
    h.promote(bad, [DEV, STAGING], health="failure")
    return wait_for(
        lambda: (
            (e := h.env(STAGING))["active"]["drySha"] == h.good  # type: ignore[attr-defined]
            and any(r["badDrySha"] == bad for r in e["reverts"])
            and e
        ),
        what="staging reverted",
    )


def test_a_failing_environment_is_reverted_by_pr_to_its_last_healthy_tree(
    harness: Harness,
) -> None:
    h, good = harness, harness.good  # type: ignore[attr-defined]
    healthy_tree = git(h.gitops.path, "rev-parse", f"{h.gitops.tip(STAGING)}^{{tree}}")
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    staging = reverted(h, bad)
    revert = staging["reverts"][-1]
    assert git(h.gitops.path, "rev-parse", f"{h.gitops.tip(STAGING)}^{{tree}}") == healthy_tree
    note = json.loads(
        git(h.gitops.path, "notes", "--ref=hydrator.metadata", "show", revert["branch"])
    )
    assert (note["drySha"], note["revertOf"]) == (good, bad)
    plugin = h.runtime.plugins["local"]
    prs = plugin.pull_requests(repo=h.config.repository("gitops"))  # type: ignore[attr-defined]
    revert_pr = next(pr for pr in prs if pr.number == revert["pr"])
    assert "revert" in revert_pr.labels and revert_pr.state.value == "merged"
    assert "health failed" in revert_pr.body
    prod = wait_for(lambda: (e := h.env(PROD))["holds"] and e, what="prod holds the bad SHA")
    assert [hold["drySha"] for hold in prod["holds"]] == [bad]
    decided = wait_for(
        lambda: h.runtime.queue.idle() and (e := h.env(PROD))["state"] == "blocked" and e,
        what="prod decided on the hold",
    )
    assert f"{bad[:7]} is held in {PROD}" in decided["reason"]
    assert decided["active"]["drySha"] == good
    metrics = h.client.get("/metrics").text
    assert 'promoter_reverts_total{environment="environment/staging"' in metrics


def test_a_descendant_of_the_bad_change_lifts_the_hold_and_promotes(harness: Harness) -> None:
    h = harness
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    reverted(h, bad)
    h.status(h.gitops.tip(STAGING), "health")
    fix = h.gitops.change("1.2.1", "Fix guestbook 1.2.0")
    h.promote(fix, ENVIRONMENTS)
    assert h.env(PROD)["holds"] == [] and h.env(STAGING)["holds"] == []


def test_after_a_revert_in_staging_a_fix_goes_through_staging_and_prod_by_real_merges(
    harness: Harness,
) -> None:
    h, good, path = harness, harness.good, harness.gitops.path  # type: ignore[attr-defined]
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    reverted(h, bad)
    revert_merge = h.gitops.tip(STAGING)
    subject = git(path, "log", "-1", "--format=%s", revert_merge)
    assert subject.startswith(f"Revert {STAGING} to {good[:7]} (#")
    h.status(revert_merge, "health")
    fix = h.gitops.change("1.2.1", "Fix guestbook 1.2.0")
    hydrated = h.gitops.tip(f"{STAGING}-next")
    # The reason names the commit CI must report on: the promoter's merge, not the hydrator's.
    merged = "the merge commit the promoter made on"
    waiting = wait_for(
        lambda: merged in (e := h.env(STAGING))["reason"] and e, what="staging to name the merge"
    )
    head = waiting["proposed"]["hydratedSha"]
    assert head != hydrated
    assert f"waiting for ci: report it on {head[:7]}, {merged} {STAGING}-next" in waiting["reason"]
    h.promote(fix, ENVIRONMENTS)
    # The hydrator's commit conflicted with the revert: the promoter merged staging into
    # staging-next with the proposed tree, and the promotion merged that for real.
    ours = git(path, "rev-list", "--merges", "-n1", f"{hydrated}..{STAGING}-next")
    assert git(path, "rev-list", "--parents", "-n1", ours).split()[1:] == [hydrated, revert_merge]
    assert git(path, "rev-parse", f"{ours}^{{tree}}") == git(
        path, "rev-parse", f"{hydrated}^{{tree}}"
    )
    promotion = h.gitops.tip(STAGING)
    assert git(path, "rev-list", "--parents", "-n1", promotion).split()[1:] == [revert_merge, ours]
    assert git(path, "show", f"{promotion}:apps/guestbook/values.yaml") == "image: guestbook:1.2.1"
    assert h.active(PROD) == fix and h.env(PROD)["holds"] == []
    assert h.active(STAGING) == fix and h.env(STAGING)["holds"] == []


def test_the_ledger_is_rebuilt_from_git_after_the_state_dir_is_lost(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    reverted(h, bad)
    wait_for(lambda: h.env(PROD)["holds"], what="prod holds the bad SHA")
    wait_for(lambda: h.runtime.queue.idle(), what="an idle queue")
    before = {b: h.env(b) for b in ENVIRONMENTS}
    h.__exit__(None, None, None)
    state = tmp_path / "state"
    for item in state.iterdir():  # everything but the local SCM's own data (the "GitHub")
        if item.name.startswith("local-scm.sqlite3"):
            continue
        shutil.rmtree(item) if item.is_dir() else item.unlink()
    assert git(h.gitops.path, "rev-parse", LEDGER_REF)
    with Harness(h.gitops, h.config) as again:
        wait_for(
            lambda: again.client.get("/api/v1/strategies/guestbook").json()["reconciledAt"],
            what="a reconcile after restart",
        )
        for branch in ENVIRONMENTS:
            after = wait_for(
                lambda b=branch: (e := again.env(b))["state"] == before[b]["state"] and e,
                what=f"{branch} to reach the same decision",
            )
            assert after["reason"] == before[branch]["reason"]
            assert after["holds"] == before[branch]["holds"]
            assert after["lastHealthy"] == before[branch]["lastHealthy"]
            assert [r["pr"] for r in after["reverts"]] == [
                r["pr"] for r in before[branch]["reverts"]
            ]


def test_a_second_failure_after_a_revert_pauses_instead_of_reverting(harness: Harness) -> None:
    h = harness
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    reverted(h, bad)
    h.status(h.gitops.tip(STAGING), "health", "failure")
    staging = wait_for(lambda: (e := h.env(STAGING))["paused"] and e, what="staging paused")
    assert "never reverted automatically" in staging["paused"]
    assert len(staging["reverts"]) == 1
    released = h.operate("release", environment="staging")
    assert released.status_code == 200, released.text
    assert released.json()["unpaused"] == STAGING
    assert "never reverted automatically" in released.json()["pausedFor"]
    wait_for(lambda: h.env(STAGING)["paused"] is None, what="staging un-paused")
    again = h.operate("release", environment="staging")
    assert again.json()["unpaused"] is None  # it says so when there was nothing to un-pause


def test_a_person_can_hold_release_revert_and_break_glass(harness: Harness) -> None:
    h, good = harness, harness.good  # type: ignore[attr-defined]
    nxt = h.gitops.change("1.3.0", "Bump guestbook to 1.3.0")
    wait_for(lambda: h.env(DEV)["pullRequest"], what="a dev PR")
    assert h.operate("hold", environment="dev", reason="").status_code == 422
    held = h.operate("hold", environment="dev", reason="freeze for the release")
    assert held.status_code == 200 and held.json()["held"] == nxt
    h.status(h.env(DEV)["proposed"]["hydratedSha"], "ci")
    blocked = wait_for(
        lambda: "held by local" in (e := h.env(DEV))["reason"] and e, what="dev held"
    )
    assert blocked["state"] == "blocked"
    assert h.operate("release", environment="dev").status_code == 200
    wait_for(lambda: h.active(DEV) == nxt, what="dev promoted after release")
    h.status(h.gitops.tip(DEV), "health")

    wait_for(lambda: h.env(STAGING)["pullRequest"], what="a staging PR")
    h.status(h.env(STAGING)["proposed"]["hydratedSha"], "ci", "failure")
    glass = h.operate("promote", environment="staging", reason="hotfix, CI is down")
    assert glass.status_code == 200, glass.text
    assert h.gitops.tip(STAGING) != h.gitops.tip(f"{STAGING}-next")
    wait_for(lambda: h.active(STAGING) == nxt, what="staging promoted past the gates")
    plugin = h.runtime.plugins["local"]
    comments = plugin.store.comments(glass.json()["pr"])  # type: ignore[attr-defined]
    said = f"past the gates by local: {markup.markdown('hotfix, CI is down')}"
    assert any(said in c for c in comments)
    wait_for(lambda: h.env(STAGING)["overrides"], what="the override in the ledger")

    back = h.operate("revert", environment="staging", to=good[:10])
    assert back.status_code == 200, back.text
    wait_for(lambda: h.active(STAGING) == good, what="staging reverted by hand")
    assert h.operate("revert", environment="nope").status_code == 404
    refused = h.operate("promote", environment="dev", reason="x")
    assert refused.status_code == 409 and "already runs" in refused.json()["error"]
