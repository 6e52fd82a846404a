"""The executor's ledger writes (``Executor._write``, ``Executor._revert``) on a real
repository and the local SCM: each change is logged once written, at its level, with the
strategy, environment, dry commit and its own fields and nothing else, and told to the
observers with its pull request; a healthy record reaches the remote only with the next
flush (batched), every other change before the run returns; a revert opens its PR, holds
the bad commit, is counted by strategy, environment and trigger, and asks for a
reconcile at once, as every other ledger change does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.engine import HealthyRecord, OpenRevert, RecordHealthy, operations
from promoter.metrics import sample
from promoter.models import PullRequestState, utcnow
from promoter.state.ledger import LEDGER_REF
from tests.daemon.acting.executor_setting import DEV, Setting, log_lines, opened
from tests.support import ENVIRONMENTS
from tests.support_logs import daemon_logs

PROD = ENVIRONMENTS[2]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path) as s:
        yield s


def remote_ledger(setting: Setting) -> str:
    """The ledger's notes ref on the remote ("" while nothing was pushed)."""
    return git(setting.gitops.path, "for-each-ref", "--format=%(objectname)", LEDGER_REF)


def held(setting: Setting) -> None:
    snapshot = setting.snapshot()
    setting.run(
        snapshot,
        operations.hold(snapshot, 2, dry_sha=setting.change, reason="bad build", now=NOW, by="ada"),
    )
    setting.events.clear()


def test_a_hold_is_logged_as_a_warning_with_exactly_its_fields_and_told_without_a_pr(
    setting: Setting,
) -> None:
    snapshot = setting.snapshot()
    actions = operations.hold(
        snapshot, 2, dry_sha=setting.change, reason="bad build", now=NOW, by="ada"
    )
    before = remote_ledger(setting)
    with daemon_logs() as out:
        outcome = setting.run(snapshot, actions)
    assert log_lines(out.getvalue(), "hold set") == [
        {
            "level": "warning",
            "msg": "hold set",
            "strategy": "guestbook",
            "environment": PROD,
            "sha": setting.change,
        }
    ]
    [told] = setting.events
    assert (told.kind, told.strategy, told.environment, told.message) == (
        "held",
        "guestbook",
        PROD,
        "held by ada: bad build",
    )
    assert (told.sha, told.dry_sha, told.pr) == (setting.change, setting.change, None)
    assert outcome.requeue_after == 0.0  # the ledger changed: show it at once
    assert remote_ledger(setting) != before  # pushed before the run returned
    holds = setting.snapshot().environments[2].ledger.holds
    assert [h.dry_sha for h in holds] == [setting.change]


def test_a_release_is_logged_at_info_with_exactly_its_fields(setting: Setting) -> None:
    held(setting)
    snapshot = setting.snapshot()
    actions = operations.release(snapshot, 2, dry_sha=None, now=NOW, by="ada")
    with daemon_logs() as out:
        outcome = setting.run(snapshot, actions)
    text = out.getvalue()
    assert log_lines(text, "hold released") == [
        {
            "level": "info",
            "msg": "hold released",
            "strategy": "guestbook",
            "environment": PROD,
            "sha": setting.change,
        }
    ]
    assert log_lines(text, "environment resumed") == [
        {
            "level": "info",
            "msg": "environment resumed",
            "strategy": "guestbook",
            "environment": PROD,
            "sha": "",
        }
    ]
    [told] = setting.events
    assert (told.kind, told.environment, told.sha, told.message) == (
        "released",
        PROD,
        setting.change,
        "released by ada",
    )
    assert outcome.requeue_after == 0.0
    assert setting.snapshot().environments[2].ledger.holds == ()


def test_a_healthy_record_reaches_the_remote_only_with_the_next_flush(setting: Setting) -> None:
    record = RecordHealthy(
        environment=0, dry_sha=setting.first, hydrated_sha=setting.gitops.tip(DEV), since=NOW
    )
    setting.runtime.ledger.flush(setting.mirror)
    before = remote_ledger(setting)

    outcome = setting.run(setting.snapshot(), [record])

    assert list(outcome.recorded) == [DEV]
    assert remote_ledger(setting) == before  # batched: not pushed yet
    ledger = setting.runtime.ledger.read(setting.mirror, "guestbook", DEV)
    assert [h.dry_sha for h in ledger.healthy] == [setting.first]  # but read here already
    [told] = setting.told("healthy")
    assert (told.environment, told.sha, told.dry_sha) == (DEV, setting.first, setting.first)
    setting.runtime.ledger.flush(setting.mirror)
    assert remote_ledger(setting) != before


def revert_branch(setting: Setting) -> str:
    return setting.snapshot().environments[0].ledger.reverts[-1].branch


# --- a revert --------------------------------------------------------------------------


def test_a_revert_opens_its_pr_holds_the_bad_commit_and_is_told_counted_and_logged(
    setting: Setting,
) -> None:
    healthy = HealthyRecord(
        dry_sha=setting.first, hydrated_sha=setting.gitops.tip(DEV), healthy_since=utcnow()
    )
    setting.runtime.ledger.update(
        setting.mirror, "guestbook", DEV, lambda led: led.with_healthy(healthy)
    )
    git(setting.gitops.path, "update-ref", f"refs/heads/{DEV}", setting.head)  # dev runs 1.1.0
    setting.runtime.mirrors.invalidate("gitops")
    snapshot = setting.snapshot()
    actions = operations.revert(snapshot, 0, to=None, auto_merge=False, by="ada")
    assert not isinstance(actions, operations.Refusal)
    [revert] = actions
    assert isinstance(revert, OpenRevert)
    labels = {"strategy": "guestbook", "environment": DEV, "trigger": revert.trigger}
    counted = sample("promoter_reverts_total", labels)

    with daemon_logs() as out:
        outcome = setting.run(snapshot, actions)

    assert outcome.requeue_after == 0.0
    assert sample("promoter_reverts_total", labels) == counted + 1
    branch = revert_branch(setting)
    [pr] = [p for p in setting.plugin.pull_requests(repo=setting.repo) if p.head_branch == branch]
    assert (pr.base_branch, pr.state) == (DEV, PullRequestState.OPEN)
    [told] = setting.told("revert")
    assert (told.environment, told.pr, told.sha, told.dry_sha) == (
        DEV,
        pr.number,
        setting.change,
        setting.change,
    )
    [line] = log_lines(out.getvalue(), "revert opened")
    assert line == {
        "level": "warning",
        "msg": "revert opened",
        "strategy": "guestbook",
        "environment": DEV,
        "sha": setting.change,
        "pr": pr.number,
        "restore": setting.first,
        "reason": revert.reason,
    }
    after = setting.snapshot()
    assert [[h.dry_sha for h in env.ledger.holds] for env in after.environments] == [
        [setting.change]
    ] * len(ENVIRONMENTS)
