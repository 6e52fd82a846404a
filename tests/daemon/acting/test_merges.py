"""The Merger re-reads the required gates from the SCM before it merges: it merges with the
head as its guard (``Merged``), or it defers, saying which gate is not success (``Deferred``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from promoter.cli.sandbox import git
from promoter.daemon import Runtime
from promoter.daemon.acting.merges import (
    Deferred,
    Merged,
    Merger,
    Unconfirmed,
    UnconfirmedMerges,
    count_settled,
    deferral,
)
from promoter.engine import MergePullRequest, Snapshot
from promoter.errors import ScmUnavailable
from promoter.metrics import sample
from promoter.models import CommitStatus, Phase
from promoter.state.pulls import MISSING
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV = ENVIRONMENTS[0]
KEY = ("gitops", f"{DEV}-next", DEV)


class Setting:
    """dev's promotion PR open on the local SCM, and the Merger of a reconcile."""

    def __init__(self, tmp_path: Path) -> None:
        self.gitops = GitOpsRepo.create(tmp_path)
        self.runtime: Runtime = Daemon(local_config(self.gitops.path, tmp_path / "state")).runtime
        self.change = self.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        self.runtime.reconciler.reconcile("guestbook")  # opens dev's PR
        self.repo = self.runtime.config.repository("gitops")
        self.plugin = self.runtime.plugins["local"]
        self.head = self.gitops.tip(f"{DEV}-next")
        pr = self.plugin.find_open_pull_request(repo=self.repo, head=f"{DEV}-next", base=DEV)
        assert pr is not None and pr.head_sha == self.head
        self.number = pr.number
        self.invalidated: list[str] = []
        reader = self.runtime.reconciler.reader("guestbook", self.plugin)
        self.merger = Merger(
            self.plugin,
            reader.gates,
            self.runtime.pr_cache,
            UnconfirmedMerges(),
            lambda repo: self.invalidated.append(repo.name),
        )

    def snapshot(self) -> Snapshot:
        strategy = self.runtime.config.strategy("guestbook")
        assert strategy is not None
        reader = self.runtime.reconciler.reader("guestbook", self.plugin)
        return reader.read(strategy, self.repo, self.runtime.mirrors.fresh(self.repo))

    def ci(self, phase: Phase) -> None:
        """CI reports on the SCM itself; the promoter has not heard of it."""
        status = CommitStatus(key="ci", phase=phase)
        self.plugin.set_commit_status(repo=self.repo, sha=self.head, status=status)

    def merge(self, purpose: Literal["promotion", "revert"] = "promotion") -> Merged | Deferred:
        action = MergePullRequest(
            purpose=purpose,
            environment=0,
            number=self.number,
            expected_head_sha=self.head,
            dry_sha=self.change,
            message="Promote",
            required_keys=("ci",),
        )
        return self.merger.merge(self.snapshot(), self.repo, action, KEY)

    def close(self) -> None:
        """Stop the git processes the mirror and the local SCM keep open."""
        self.runtime.mirrors.get(self.repo).close()
        self.plugin.close()

    def still_open(self) -> bool:
        pr = self.plugin.find_open_pull_request(repo=self.repo, head=f"{DEV}-next", base=DEV)
        return pr is not None and pr.number == self.number


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    opened = Setting(tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.mark.parametrize(
    ("phase", "said"), [(Phase.PENDING, "ci is pending"), (Phase.FAILURE, "ci failed")]
)
def test_a_required_gate_no_longer_success_on_the_scm_defers_the_merge_saying_which(
    setting: Setting, phase: Phase, said: str
) -> None:
    dev_before = setting.gitops.tip(DEV)
    setting.ci(phase)
    assert setting.merge() == Deferred(f"merge deferred: {said} on {setting.head[:7]}")
    assert setting.gitops.tip(DEV) == dev_before
    assert setting.still_open()
    assert setting.invalidated == []


def test_a_required_gate_the_scm_has_never_heard_of_defers_the_merge(setting: Setting) -> None:
    result = setting.merge()
    assert result == Deferred(f"merge deferred: ci has no status on {setting.head[:7]}")
    assert setting.still_open()


def test_a_merge_whose_earlier_answer_was_lost_is_not_found_done_again_once_merged(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    lost = Unconfirmed(setting.head, setting.change, "promotion", setting.number)
    setting.merger.unconfirmed.remember("guestbook", DEV, lost)

    assert isinstance(setting.merge(), Merged)

    setting.runtime.mirrors.invalidate(setting.repo.name)
    snapshot = setting.snapshot()
    assert snapshot.environments[0].active is not None
    assert snapshot.environments[0].active.dry_sha == setting.change
    mirror = setting.runtime.mirrors.fresh(setting.repo)
    assert setting.merger.unconfirmed.settle(snapshot, mirror) == []


def test_every_required_gate_success_on_the_scm_merges_with_the_head_as_guard(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    result = setting.merge()
    assert result == Merged(setting.gitops.tip(DEV))
    assert git(setting.gitops.path, "rev-parse", f"{DEV}^2") == setting.head
    assert not setting.still_open()
    assert setting.invalidated == ["gitops"]


def test_a_deferral_names_every_gate_that_is_not_success_in_order() -> None:
    statuses = {"ci": CommitStatus(key="ci", phase=Phase.PENDING)}
    said = deferral(["ci", "e2e"], statuses, "1a2b3c4d" * 5)
    assert said == "merge deferred: ci is pending, e2e has no status on 1a2b3c4"


def test_a_deferred_merge_is_logged_with_its_strategy_environment_pull_request_and_gates(
    setting: Setting, caplog: pytest.LogCaptureFixture
) -> None:
    setting.ci(Phase.PENDING)
    with caplog.at_level(logging.INFO, logger="promoter.actions"):
        setting.merge()
    [line] = [r for r in caplog.records if r.getMessage() == "merge deferred: gates changed"]
    assert [getattr(line, k, None) for k in ("strategy", "environment", "pr", "gates")] == [
        "guestbook",
        DEV,
        setting.number,
        ["ci"],
    ]


class AnswerLost:
    """The local SCM, whose answer to a merge is lost after the merge took effect (a 502)."""

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plugin, name)

    def merge_pull_request(self, **kwargs: Any) -> str:
        self._plugin.merge_pull_request(**kwargs)
        raise ScmUnavailable("502 Bad Gateway")


def test_a_merge_whose_answer_is_lost_is_found_done_later_with_its_purpose_and_number(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    setting.merger.plugin = AnswerLost(setting.plugin)
    assert setting.runtime.pr_cache.get(KEY) is not MISSING

    with pytest.raises(ScmUnavailable):
        setting.merge()

    assert setting.runtime.pr_cache.get(KEY) is MISSING

    setting.runtime.mirrors.invalidate(setting.repo.name)
    mirror = setting.runtime.mirrors.fresh(setting.repo)
    assert setting.merger.unconfirmed.settle(setting.snapshot(), mirror) == [
        (DEV, Unconfirmed(setting.head, setting.change, "promotion", setting.number))
    ]
    assert setting.invalidated == ["gitops"]


@pytest.mark.parametrize(("purpose", "counted"), [("promotion", 1), ("revert", 0)])
def test_a_promotion_merged_is_counted_under_its_strategy_and_environment_and_a_revert_is_not(
    setting: Setting, purpose: Literal["promotion", "revert"], counted: int
) -> None:
    setting.ci(Phase.SUCCESS)
    labels = {"strategy": "guestbook", "environment": DEV}
    before = sample("promoter_promotions_total", labels)

    assert isinstance(setting.merge(purpose), Merged)

    assert sample("promoter_promotions_total", labels) == before + counted


@pytest.mark.parametrize(("purpose", "counted"), [("promotion", 1), ("revert", 0)])
def test_a_merge_whose_answer_was_lost_is_counted_once_found_done_and_a_revert_is_not(
    setting: Setting, purpose: Literal["promotion", "revert"], counted: int
) -> None:
    setting.ci(Phase.SUCCESS)
    setting.merger.plugin = AnswerLost(setting.plugin)
    labels = {"strategy": "guestbook", "environment": DEV}
    before = sample("promoter_promotions_total", labels)
    with pytest.raises(ScmUnavailable):
        setting.merge(purpose)
    assert sample("promoter_promotions_total", labels) == before

    setting.runtime.mirrors.invalidate(setting.repo.name)
    mirror = setting.runtime.mirrors.fresh(setting.repo)
    for _ in range(2):
        count_settled(setting.snapshot(), mirror, setting.merger.unconfirmed)

    assert sample("promoter_promotions_total", labels) == before + counted


def test_a_lost_merge_is_found_done_by_its_head_in_history_when_another_dry_commit_runs(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    assert isinstance(setting.merge(), Merged)
    older = Unconfirmed(setting.head, "0" * 40, "promotion", setting.number)
    setting.merger.unconfirmed.remember("guestbook", DEV, older)

    labels = {"strategy": "guestbook", "environment": DEV}
    before = sample("promoter_promotions_total", labels)

    setting.runtime.mirrors.invalidate(setting.repo.name)
    mirror = setting.runtime.mirrors.fresh(setting.repo)
    count_settled(setting.snapshot(), mirror, setting.merger.unconfirmed)

    assert sample("promoter_promotions_total", labels) == before + 1
    assert setting.merger.unconfirmed.settle(setting.snapshot(), mirror) == []


def test_a_lost_merge_of_a_later_environment_is_found_when_an_earlier_one_has_none(
    setting: Setting,
) -> None:
    snapshot = setting.snapshot()
    later = snapshot.environments[1]
    assert later.active is not None and later.active.dry_sha is not None
    lost = Unconfirmed("0" * 40, later.active.dry_sha, "promotion", 7)
    setting.merger.unconfirmed.remember("guestbook", later.branch, lost)

    mirror = setting.runtime.mirrors.fresh(setting.repo)
    assert setting.merger.unconfirmed.settle(snapshot, mirror) == [(later.branch, lost)]
