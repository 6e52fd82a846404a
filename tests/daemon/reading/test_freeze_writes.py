"""Freezing and unfreezing by hand (``Freezes``): which note each scope is written under,
in which repositories, which strategies it wakes, and what is refused before anything is
written (an environment without its strategy, an unknown strategy or environment, an
unfreeze of a scope that is not frozen)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from promoter.config import Config, Repository
from promoter.daemon.reading.freezes import ALL, FreezeResult, Freezes
from promoter.engine import EnvLedger, Freeze
from promoter.errors import AmbiguousName
from promoter.git import GitMirror
from promoter.state.ledger import GitLedger
from tests.support import local_config, teams_strategy

NOW = datetime(2026, 12, 24, 12, tzinfo=UTC)
PROD = "environment/prod"


class Notes:
    """The ledger notes, by (repository, strategy key, environment key), in memory."""

    def __init__(self) -> None:
        self.notes: dict[tuple[str, str, str], EnvLedger] = {}

    def read(self, mirror: GitMirror, strategy: str, environment: str) -> EnvLedger:
        return self.notes.get((str(mirror), strategy, environment), EnvLedger())

    def update(
        self,
        mirror: GitMirror,
        strategy: str,
        environment: str,
        change: Callable[[EnvLedger], EnvLedger],
    ) -> EnvLedger:
        new = change(self.read(mirror, strategy, environment))
        self.notes[(str(mirror), strategy, environment)] = new
        return new

    def frozen(self) -> dict[tuple[str, str, str], str]:
        return {k: v.freeze.reason for k, v in self.notes.items() if v.freeze is not None}


def by_name(repo: Repository) -> GitMirror:
    return cast(GitMirror, repo.name)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return local_config(tmp_path / "gitops", tmp_path / "state")


def freezes(config: Config, notes: Notes, owns: Callable[[str], bool] = lambda r: True) -> Freezes:
    return Freezes(config, cast(GitLedger, notes), by_name, clock=lambda: NOW, owns=owns)


@pytest.mark.parametrize(
    ("strategy", "environment", "key", "scope"),
    [
        (None, None, (ALL, ALL), "everything"),
        ("guestbook", None, ("guestbook", ALL), "strategy guestbook"),
        ("guestbook", "prod", ("guestbook", PROD), f"{PROD} of guestbook"),
    ],
)
def test_each_scope_is_frozen_under_its_own_key_and_unfrozen_there_alone(
    config: Config, strategy: str | None, environment: str | None, key: tuple[str, str], scope: str
) -> None:
    notes = Notes()
    done = freezes(config, notes).freeze(
        strategy=strategy, environment=environment, reason="incident 42", by="ada"
    )
    assert done == FreezeResult("frozen", scope, "incident 42", "ada", ("guestbook",))
    assert notes.frozen() == {("gitops", *key): "incident 42"}
    assert notes.notes[("gitops", *key)].freeze == Freeze(reason="incident 42", by="ada", since=NOW)
    lifted = freezes(config, notes).unfreeze(strategy=strategy, environment=environment, by="bo")
    assert lifted == FreezeResult("unfrozen", scope, "incident 42", "bo", ("guestbook",))
    assert notes.frozen() == {}


def test_an_unfreeze_lifts_its_own_scope_and_leaves_the_others(config: Config) -> None:
    notes = Notes()
    freezes(config, notes).freeze(strategy=None, environment=None, reason="all", by="ada")
    freezes(config, notes).freeze(strategy="guestbook", environment="prod", reason="p", by="ada")
    freezes(config, notes).unfreeze(strategy="guestbook", environment="prod", by="bo")
    assert notes.frozen() == {("gitops", ALL, ALL): "all"}


def test_a_freeze_of_everything_is_written_only_in_the_repositories_this_replica_serves(
    config: Config,
) -> None:
    notes = Notes()
    done = freezes(config, notes, owns=lambda r: False).freeze(
        strategy=None, environment=None, reason="r", by="ada"
    )
    assert (done.strategies, notes.frozen()) == ((), {})


@pytest.mark.parametrize(
    ("strategy", "environment", "why"),
    [
        (None, "prod", "name a strategy to freeze one of its environments"),
        ("nope", None, "no strategy named 'nope'"),
        ("nope", "prod", "no strategy named 'nope'"),
        ("guestbook", "qa", "guestbook has no environment 'qa'"),
    ],
)
def test_a_scope_that_does_not_exist_is_refused_before_anything_is_written(
    config: Config, strategy: str | None, environment: str | None, why: str
) -> None:
    notes = Notes()
    with pytest.raises(LookupError) as refused:
        freezes(config, notes).freeze(
            strategy=strategy, environment=environment, reason="r", by="ada"
        )
    assert (refused.value.args[0], notes.notes) == (why, {})
    with pytest.raises(LookupError) as refused:
        freezes(config, notes).unfreeze(strategy=strategy, environment=environment, by="ada")
    assert refused.value.args[0] == why


def test_unfreezing_a_scope_that_is_not_frozen_is_refused_by_its_name(config: Config) -> None:
    notes = Notes()
    freezes(config, notes).freeze(strategy=None, environment=None, reason="all", by="ada")
    with pytest.raises(LookupError, match=f"^{PROD} of guestbook is not frozen$"):
        freezes(config, notes).unfreeze(strategy="guestbook", environment="prod", by="bo")


def test_an_environment_name_several_branches_end_with_is_refused_naming_its_strategy(
    tmp_path: Path,
) -> None:
    config = local_config(tmp_path / "gitops", tmp_path / "state", extra_strategy=teams_strategy())
    notes = Notes()
    with pytest.raises(AmbiguousName, match=r"^'prod' names 2 environments of teams "):
        freezes(config, notes).freeze(strategy="teams", environment="prod", reason="r", by="ada")
    assert notes.notes == {}
