"""Views and the parsed ledger notes share pydantic's field-name sets, and their models
behave exactly as before."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from promoter.daemon.memory.compact import FieldSets, SharedFields, may_hold_models
from promoter.engine import CommitState, EnvironmentSnapshot, HealthyRecord, Snapshot
from promoter.git import GitMirror
from promoter.models import CommitStatus, Phase
from promoter.state.ledger import GitLedger
from tests.support import GitOpsRepo

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def snapshot(sha: str) -> Snapshot:
    status = CommitStatus(key="health", phase=Phase.SUCCESS)
    env = EnvironmentSnapshot(
        branch="env/dev",
        proposed_branch="env/dev-next",
        auto_merge=True,
        active=CommitState(hydrated_sha=sha, tree_sha="t" * 40, statuses=(status,)),
    )
    return Snapshot(
        strategy="app", repository="repo", dry_branch="main", environments=(env,), now=NOW
    )


def test_models_built_alike_share_one_set_of_names_after_compacting() -> None:
    one, two = snapshot("a" * 40), snapshot("b" * 40)
    sets = FieldSets()
    sets.compact(one, None, two)  # a failed reconcile's view may have no snapshot
    first, second = one.environments[0], two.environments[0]
    assert type(first.model_fields_set) is SharedFields
    assert first.model_fields_set is second.model_fields_set
    assert first.active is not None and second.active is not None
    assert first.active.model_fields_set is second.active.model_fields_set
    assert first.active.statuses[0].model_fields_set is second.active.statuses[0].model_fields_set


def test_a_compacted_model_copies_updates_compares_and_dumps_as_before() -> None:
    fresh = snapshot("a" * 40)
    compacted = fresh.model_copy(deep=True)
    FieldSets().compact(compacted)
    env = compacted.environments[0]
    updated = env.model_copy(update={"error": "boom"})
    assert updated.error == "boom" and env.error is None
    assert "error" in updated.model_fields_set and "error" not in env.model_fields_set
    assert type(updated.model_fields_set) is set
    assert compacted == fresh
    assert compacted.model_dump(exclude_unset=True) == fresh.model_dump(exclude_unset=True)
    assert copy.deepcopy(compacted) == fresh


class Loose(BaseModel):
    model_config = ConfigDict(frozen=False)
    name: str = ""


def test_a_model_that_is_not_frozen_keeps_its_own_set() -> None:
    one, two = Loose(name="a"), Loose(name="b")
    FieldSets().compact(one, two)
    assert one.model_fields_set is not two.model_fields_set
    one.name = "c"
    assert two.model_fields_set == {"name"}


class Leaf(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str = ""


class Branches(BaseModel):
    model_config = ConfigDict(frozen=True)
    one: Leaf | None = None
    many: tuple[Leaf, ...] = ()
    nested: tuple[tuple[Leaf, ...], ...] = ()
    listed: list[Leaf] = []
    anything: Any = None
    names: tuple[str, ...] = ()


@pytest.mark.parametrize(
    ("annotation", "walked"),
    [
        (str, False),
        (int, False),
        (datetime, False),
        (tuple[str, ...], False),
        (Literal["a", "b"], False),
        (dict[str, Leaf], False),
        (str | None, False),
        (Leaf, True),
        (Leaf | None, True),
        (tuple[Leaf, ...], True),
        (tuple[str, Leaf], True),
        (frozenset[Leaf], True),
        (Annotated[Leaf, "doc"], True),
        (tuple, True),
        (Any, True),
        (object, True),
    ],
)
def test_the_walk_goes_down_the_fields_whose_type_can_hold_a_model(
    annotation: Any, walked: bool
) -> None:
    assert may_hold_models(annotation) is walked


def test_models_below_optional_tuple_nested_list_and_untyped_fields_are_all_shared() -> None:
    def tree() -> Branches:
        return Branches(
            one=Leaf(name="a"),
            many=(Leaf(name="b"),),
            nested=((Leaf(name="c"),),),
            listed=[Leaf(name="d")],
            anything=(Leaf(name="e"),),
            names=("x",),
        )

    first, second = tree(), tree()
    FieldSets().compact(first, second)
    leaves = [
        (a, b)
        for a, b in [
            (first.one, second.one),
            (first.many[0], second.many[0]),
            (first.nested[0][0], second.nested[0][0]),
            (first.listed[0], second.listed[0]),
            (first.anything[0], second.anything[0]),
        ]
    ]
    for a, b in leaves:
        assert a is not None and b is not None
        assert type(a.model_fields_set) is SharedFields
        assert a.model_fields_set is b.model_fields_set


def healthy(sha: str) -> HealthyRecord:
    return HealthyRecord(dry_sha=sha, hydrated_sha=sha, healthy_since=NOW)


def test_notes_read_back_are_kept_by_their_blob_and_share_the_views_field_sets(
    tmp_path: Path,
) -> None:
    """A daemon reads every environment's note back after each ledger push: what it keeps
    of them is one parsed value per distinct note, found by the note's blob (not its
    text, which would be kept besides), with the models' field-name sets shared."""
    gitops = GitOpsRepo.create(tmp_path)
    writer = GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "a")
    writer.refresh()
    ledger = GitLedger()
    for env in ("dev", "staging", "prod"):
        ledger.update(writer, "s", env, lambda led: led.with_healthy(healthy("1" * 40)))
    ledger.update(writer, "t", "dev", lambda led: led.with_healthy(healthy("1" * 40)))
    mirror = GitMirror(name="gitops", url=str(gitops.path), root=tmp_path / "b")
    mirror.refresh()
    reader = GitLedger(compact=FieldSets().compact)
    read = [reader.read(mirror, s, e) for s, e in (("s", "dev"), ("s", "prod"), ("t", "dev"))]
    assert read[0] is read[1] is read[2]  # one note's content, parsed once
    assert read[0].last_healthy == healthy("1" * 40)
    assert type(read[0].__pydantic_fields_set__) is SharedFields
    assert type(read[0].healthy[0].__pydantic_fields_set__) is SharedFields
    assert all(len(key) == 40 and int(key, 16) >= 0 for key in reader._parsed)
    mirror.close()
    writer.close()
