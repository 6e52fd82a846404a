"""The freezes covering an environment, as the reader gives them to the engine: a person's
(everything's, the strategy's, the environment's own), the configuration's dates not over
yet (a top-level freeze with no ``strategies`` covers every strategy), and a freeze note
that cannot be read blocks the environment (fail closed), never taken for no freeze."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.config import PromotionStrategy
from promoter.config.freezes import FreezeWindow, GlobalFreezeWindow
from promoter.daemon import Runtime
from promoter.daemon.reading.freezes import (
    ALL,
    configured,
    dated_periods,
    ledger_key,
    manual_periods,
    scope_words,
)
from promoter.engine import EnvLedger, Freeze, FreezePeriod
from promoter.state.ledger import LEDGER_REF, LedgerUnreadable, key_object
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV, STAGING, PROD = ENVIRONMENTS
NOW = datetime(2026, 12, 24, 12, tzinfo=UTC)
SINCE = datetime(2026, 12, 1, tzinfo=UTC)


def strategy(name: str = "guestbook", **fields: object) -> PromotionStrategy:
    return PromotionStrategy.model_validate(
        {
            "name": name,
            "repository": "gitops",
            "environments": [{"branch": b} for b in ENVIRONMENTS],
            **fields,
        }
    )


def frozen(reason: str, by: str = "ada") -> EnvLedger:
    return EnvLedger().frozen(Freeze(reason=reason, by=by, since=SINCE))


# --- a person's freezes ------------------------------------------------------------------


def test_a_persons_freezes_of_every_scope_cover_the_environment_each_in_its_words() -> None:
    notes = {(ALL, ALL): frozen("incident 42"), ("guestbook", ALL): frozen("audit", by="bo")}
    found = manual_periods(
        lambda s, e: notes.get((s, e), EnvLedger()), "guestbook", PROD, frozen("mine", by="cy")
    )
    assert found == [
        FreezePeriod(reason="incident 42", scope="everything", start=SINCE, by="ada"),
        FreezePeriod(reason="audit", scope="strategy guestbook", start=SINCE, by="bo"),
        FreezePeriod(reason="mine", scope=f"{PROD} of guestbook", start=SINCE, by="cy"),
    ]


def test_no_note_is_no_freeze() -> None:
    assert manual_periods(lambda s, e: EnvLedger(), "guestbook", PROD, EnvLedger()) == []


@pytest.mark.parametrize("broken", [(ALL, ALL), ("guestbook", ALL)])
def test_a_freeze_note_that_cannot_be_read_is_never_taken_for_no_freeze(
    broken: tuple[str, str],
) -> None:
    def read(strategy: str, environment: str) -> EnvLedger:
        if (strategy, environment) == broken:
            raise LedgerUnreadable("the note cannot be parsed")
        return EnvLedger()

    with pytest.raises(LedgerUnreadable):
        manual_periods(read, "guestbook", PROD, EnvLedger())


def test_a_freeze_is_written_under_the_key_of_its_scope() -> None:
    assert ledger_key(None, None) == (ALL, ALL)
    assert ledger_key("guestbook", None) == ("guestbook", ALL)
    assert ledger_key("guestbook", PROD) == ("guestbook", PROD)
    assert scope_words(None, None) == "everything"
    assert scope_words(None, PROD) == "everything"
    assert scope_words("guestbook", None) == "strategy guestbook"
    assert scope_words("guestbook", PROD) == f"{PROD} of guestbook"


# --- the configuration's dates ----------------------------------------------------------


def christmas(**fields: object) -> GlobalFreezeWindow:
    return GlobalFreezeWindow.model_validate(
        {"reason": "Christmas", "dates": ["2026-12-24", "2026-12-25"], **fields}
    )


def test_a_top_level_freeze_without_strategies_covers_every_strategy() -> None:
    everything = [christmas()]
    for name in ("guestbook", "billing"):
        assert configured(strategy(name), everything) == [(everything[0], "everything")]


def test_a_top_level_freeze_naming_strategies_covers_those_alone() -> None:
    some = christmas(strategies=["billing", "search"])
    assert configured(strategy("guestbook"), [some]) == []
    assert configured(strategy("billing"), [some]) == [(some, "strategies billing, search")]


def test_a_strategys_own_freezes_come_first_then_the_top_levels() -> None:
    own = {"reason": "release week", "from": "2026-11-16T00:00", "until": "2026-11-20T00:00"}
    mine = strategy(freezes=[own])
    everything = christmas()
    found = configured(mine, [everything])
    assert [(w.reason, scope) for w, scope in found] == [
        ("release week", "strategy guestbook"),
        ("Christmas", "everything"),
    ]


def test_a_dated_freeze_counts_until_it_ends_and_only_on_the_environments_it_names() -> None:
    window = FreezeWindow.model_validate(
        {"reason": "Christmas", "dates": ["2026-12-24"], "environments": [PROD]}
    )
    start, end = window.intervals()[0]
    assert dated_periods([window], "everything", PROD, NOW) == [
        FreezePeriod(reason="Christmas", scope="everything", start=start, end=end)
    ]
    assert dated_periods([window], "everything", DEV, NOW) == []
    assert dated_periods([window], "everything", PROD, end) == []  # over at its end
    assert len(dated_periods([window], "everything", PROD, end - timedelta(seconds=1))) == 1


def test_every_interval_of_a_freeze_not_over_yet_counts() -> None:
    window = FreezeWindow.model_validate(
        {"reason": "holidays", "dates": ["2026-12-24", "2026-12-31"], "timeZone": "Europe/Berlin"}
    )
    found = dated_periods([window], "strategy guestbook", DEV, NOW)
    assert [(p.start, p.end, p.time_zone) for p in found] == [
        (*interval, "Europe/Berlin") for interval in window.intervals()
    ]
    later = dated_periods([window], "strategy guestbook", DEV, found[0].end or NOW)
    assert len(later) == 1


# --- the reader: a note that cannot be read blocks -------------------------------------


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    return GitOpsRepo.create(tmp_path)


@pytest.fixture
def runtime(gitops: GitOpsRepo, tmp_path: Path) -> Runtime:
    """A runtime that is never started: the test drives its reconciles."""
    return Daemon(local_config(gitops.path, tmp_path / "state")).runtime


def break_note(gitops: GitOpsRepo, strategy_key: str, environment_key: str) -> None:
    """The freeze note of a scope, on the remote, replaced by text that is not JSON."""
    data, sha = key_object(strategy_key, environment_key)
    git(gitops.path, "hash-object", "-w", "--stdin", stdin=data.decode())
    git(gitops.path, "notes", f"--ref={LEDGER_REF}", "add", "-f", "-m", "{not json", sha)


@pytest.mark.parametrize(
    ("key", "name"), [((ALL, ALL), "everything's"), (("guestbook", ALL), "the strategy's")]
)
def test_an_unreadable_freeze_note_blocks_every_environment_it_could_cover(
    gitops: GitOpsRepo, runtime: Runtime, key: tuple[str, str], name: str
) -> None:
    break_note(gitops, *key)
    runtime.reconciler.reconcile("guestbook")
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.decision is not None, name
    found = {v.branch: (v.state.value, v.reason) for v in view.decision.environments}
    assert {b: state for b, (state, _) in found.items()} == {b: "error" for b in ENVIRONMENTS}
    assert [
        b for b, (_, why) in found.items() if f"the freezes of {b} cannot be read" not in why
    ] == []
