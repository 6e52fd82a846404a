"""The one lookup of an environment a person names: the whole branch, or the one branch
whose last part it is; a last part several branches share names none of them."""

from __future__ import annotations

import pytest

from promoter.config import environment_branch, environment_index, short_name
from promoter.errors import AmbiguousName, PermanentError

TEAMS = ["team-a/prod", "team-b/prod"]


def test_a_last_part_two_branches_share_is_refused_naming_both() -> None:
    with pytest.raises(AmbiguousName) as refused:
        environment_index([*TEAMS, "team-a/dev"], "prod", strategy="shop")
    assert refused.value.name == "prod"
    assert refused.value.candidates == tuple(TEAMS)
    assert str(refused.value) == (
        "'prod' names 2 environments of shop (team-a/prod, team-b/prod): give the whole branch"
    )
    assert isinstance(refused.value, PermanentError)
    assert not isinstance(refused.value, LookupError)


def test_the_whole_branch_names_one_environment_even_when_its_last_part_is_shared() -> None:
    assert environment_index(TEAMS, "team-b/prod") == 1
    assert environment_branch(TEAMS, "team-a/prod") == "team-a/prod"


def test_a_branch_named_whole_wins_over_the_branches_it_is_the_last_part_of() -> None:
    assert environment_branch(["team-a/prod", "prod", "team-b/prod"], "prod") == "prod"


def test_a_last_part_one_branch_has_names_it() -> None:
    branches = ["environment/dev", "environment/staging", "environment/prod"]
    assert environment_index(branches, "staging") == 1
    assert environment_branch(branches, "prod") == "environment/prod"


def test_a_name_no_branch_has_names_nothing() -> None:
    assert environment_index(TEAMS, "dev") is None
    assert environment_branch(TEAMS, "team-a") is None
    assert environment_branch([], "prod") is None


def test_the_last_part_of_a_branch_is_after_its_last_slash() -> None:
    assert [short_name(b) for b in ("environment/prod", "a/b/c", "prod")] == ["prod", "c", "prod"]
