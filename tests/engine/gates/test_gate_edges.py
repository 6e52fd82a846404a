"""Rules 3 and 4 at their edges: the exact verdicts of the proposed-status and
previous-environment gates when there is nothing proposed, and the words they give (the
checks the promoter runs itself add what their API said, only when it explains a wait or
a failure; several keys are listed and joined as a sentence reads).
"""

from __future__ import annotations

from typing import Any, Literal

import pytest

from promoter.config import GateSpec
from promoter.engine import PREVIOUS_ENVIRONMENT_KEY, GateVerdict, is_no_op
from promoter.engine.core.snapshot import Snapshot, UpstreamGroup
from promoter.engine.gates.gates import ProposedStatus, previous_environment
from promoter.models import CommitStatus, Phase

from ..strategies import Env, build, hydrated, short, status

APPS = GateSpec.model_validate({"name": "apps", "flux": {}})
INFRA = GateSpec.model_validate({"name": "infra", "flux": {}})
SMOKE = GateSpec.model_validate({"name": "smoke", "http": {"url": "https://smoke.example.invalid"}})
SOAK = GateSpec.model_validate({"soak": {"duration": "5m"}})


def edit(snapshot: Snapshot, index: int, **updates: Any) -> Snapshot:
    envs = list(snapshot.environments)
    assert set(updates) <= set(type(envs[index]).model_fields), "not a field of the snapshot"
    envs[index] = envs[index].model_copy(update=updates)
    return snapshot.model_copy(update={"environments": tuple(envs)})


def reported(
    snapshot: Snapshot, index: int, side: Literal["active", "proposed"], *found: CommitStatus
) -> Snapshot:
    """Environment ``index``'s ``side`` commit carries exactly the statuses ``found``."""
    commit = getattr(snapshot.environments[index], side)
    assert commit is not None
    return edit(snapshot, index, **{side: commit.model_copy(update={"statuses": found})})


def running(branch: str, position: int) -> str:
    """How a reason names the commit ``branch`` runs at dry ``position``."""
    return f"{hydrated(branch, position)[:7]}, the commit {branch} runs (dry {short(position)})"


def dev_then_staging(dev_at: int, *gates: GateSpec, **dev: Any) -> Snapshot:
    """dev on ``dev_at`` with ``gates`` as its active gates; staging on 1 proposing 3."""
    keys = tuple(g.key for g in gates)
    snapshot = build(
        Env("dev", active=dev_at, proposed=dev_at, active_keys=keys, **dev),
        Env("staging", active=1, proposed=3, pr="current"),
    )
    return edit(snapshot, 0, gates=gates)


# --- nothing proposed ----------------------------------------------------------------


NOTHING_PROPOSED = [
    pytest.param({"proposed": None}, id="no proposed branch"),
    pytest.param({"proposed_metadata_error": "no hydrator.metadata"}, id="unreadable"),
]


@pytest.mark.parametrize("proposed", NOTHING_PROPOSED)
def test_a_proposed_status_gate_without_a_readable_proposed_commit_waits_for_one(
    proposed: dict[str, Any],
) -> None:
    snapshot = build(Env("dev", active=1, proposed_keys=("ci",), **proposed))
    assert ProposedStatus("ci")(snapshot, 0) == GateVerdict(
        name="ci", phase=Phase.PENDING, reason="no proposed commit"
    )


@pytest.mark.parametrize("proposed", NOTHING_PROPOSED)
def test_the_previous_environment_gate_without_a_readable_proposed_commit_waits_for_one(
    proposed: dict[str, Any],
) -> None:
    snapshot = build(Env("dev", active=3, proposed=3), Env("staging", active=1, **proposed))
    assert previous_environment(snapshot, 1) == GateVerdict(
        name=PREVIOUS_ENVIRONMENT_KEY, phase=Phase.PENDING, reason="no proposed commit"
    )


@pytest.mark.parametrize(
    "env",
    [
        Env("dev", active=1, proposed=None),
        Env("dev", active=None, proposed=3),
        Env("dev", active=1, proposed=3, proposed_metadata_error="no hydrator.metadata"),
        Env("dev", active=1, proposed=3, active_metadata_error="no hydrator.metadata"),
    ],
    ids=["no proposed branch", "no active branch", "proposed unreadable", "active unreadable"],
)
def test_an_environment_missing_either_side_is_not_a_no_op(env: Env) -> None:
    snapshot = build(env)
    assert is_no_op(snapshot, snapshot.environments[0]) is False


# --- rule 3: the words of a check the promoter runs -----------------------------------


def proposed_smoke(phase: str, words: str, *gates: GateSpec) -> GateVerdict:
    """The verdict of the ``promoter/smoke`` gate of dev, configured with ``gates``."""
    snapshot = build(Env("dev", active=1, proposed=3, proposed_keys=(SMOKE.key,)))
    snapshot = reported(
        edit(snapshot, 0, gates=gates), 0, "proposed", status(SMOKE.key, phase, words)
    )
    return ProposedStatus(SMOKE.key)(snapshot, 0)


ON_HEAD = f"{hydrated('environment/dev-next', 3)[:7]} (environment/dev-next, dry {short(3)})"


def test_a_failing_check_the_promoter_runs_says_what_its_api_answered() -> None:
    verdict = proposed_smoke("failure", "HTTP 503 from the smoke test", SMOKE, SOAK)
    assert (verdict.phase, verdict.reason) == (
        Phase.FAILURE,
        f"promoter/smoke failed on {ON_HEAD}: HTTP 503 from the smoke test",
    )


def test_a_passing_check_the_promoter_runs_adds_no_words() -> None:
    verdict = proposed_smoke("success", "HTTP 200 in 12 ms", SMOKE)
    assert verdict.reason == f"promoter/smoke passed on {ON_HEAD}"


def test_a_status_of_someone_elses_ci_is_not_quoted() -> None:
    # The same key, but not a gate the promoter runs: a soak is judged by the engine, and
    # without the http gate configured the status is some CI's, whose words are its own.
    for gates in ((), (SOAK,)):
        verdict = proposed_smoke("failure", "HTTP 503 from the smoke test", *gates)
        assert verdict.reason == f"promoter/smoke failed on {ON_HEAD}"


# --- rule 4: the words of the previous environment's gates ----------------------------


def test_two_failing_checks_of_the_previous_environment_are_named_with_both_their_words() -> None:
    snapshot = reported(
        dev_then_staging(3, APPS, INFRA),
        0,
        "active",
        status(APPS.key, "failure", "Kustomization apps: HealthCheckFailed"),
        status(INFRA.key, "failure", "Kustomization infra: not Ready"),
    )
    verdict = previous_environment(snapshot, 1)
    assert (verdict.phase, verdict.reason) == (
        Phase.FAILURE,
        f"promoter/apps, promoter/infra failed on {running('environment/dev', 3)}:"
        " Kustomization apps: HealthCheckFailed; Kustomization infra: not Ready",
    )


def test_a_previous_environment_not_there_yet_and_failing_says_both_with_the_checks_words() -> None:
    snapshot = reported(
        dev_then_staging(2, APPS),
        0,
        "active",
        status(APPS.key, "failure", "Kustomization apps: HealthCheckFailed"),
    )
    verdict = previous_environment(snapshot, 1)
    assert (verdict.phase, verdict.reason) == (
        Phase.FAILURE,
        f"environment/dev is not on {short(3)} yet; promoter/apps failed on"
        f" {running('environment/dev', 2)}: Kustomization apps: HealthCheckFailed",
    )


def test_a_check_waited_for_on_the_previous_environment_says_what_it_waits_for() -> None:
    snapshot = reported(
        dev_then_staging(3, APPS),
        0,
        "active",
        status(APPS.key, "pending", "Kustomization apps: not applied at this revision yet"),
    )
    verdict = previous_environment(snapshot, 1)
    assert (verdict.phase, verdict.reason) == (
        Phase.PENDING,
        f"waiting for promoter/apps on environment/dev: report it on"
        f" {running('environment/dev', 3)}: Kustomization apps: not applied at this revision yet",
    )


def test_a_previous_environment_not_there_yet_is_not_explained_by_its_pending_checks() -> None:
    # Its pending checks are about the commit it runs now, which is not the one promoted.
    snapshot = reported(
        dev_then_staging(2, APPS),
        0,
        "active",
        status(APPS.key, "pending", "Kustomization apps: not applied at this revision yet"),
    )
    verdict = previous_environment(snapshot, 1)
    assert (verdict.phase, verdict.reason) == (
        Phase.PENDING,
        f"environment/dev is not on {short(3)} yet",
    )


def test_several_gates_waited_for_on_the_previous_environment_are_reported_as_them() -> None:
    snapshot = build(
        Env("dev", active=3, proposed=3, active_keys=("health", "e2e")),
        Env("staging", active=1, proposed=3),
    )
    verdict = previous_environment(snapshot, 1)
    assert (verdict.phase, verdict.reason) == (
        Phase.PENDING,
        f"waiting for health, e2e on environment/dev: report them on"
        f" {running('environment/dev', 3)}",
    )


# --- rule 4 in a graph ----------------------------------------------------------------


def healthy(name: str, at: int, health: str = "success") -> Env:
    return Env(
        name, active=at, proposed=at, active_keys=("health",), active_statuses={"health": health}
    )


def waiting_for(snapshot: Snapshot, *groups: UpstreamGroup) -> Snapshot:
    """The last environment of ``snapshot`` waits for ``groups``."""
    return edit(snapshot, len(snapshot.environments) - 1, upstreams=groups)


def test_a_later_group_short_of_its_quorum_holds_even_when_an_earlier_one_is_met() -> None:
    snapshot = build(
        healthy("a", 3), healthy("b", 3), healthy("c", 1), Env("prod", active=1, proposed=3)
    )
    snapshot = waiting_for(
        snapshot, UpstreamGroup(indices=(0, 1), require=2), UpstreamGroup(indices=(2,), require=1)
    )
    verdict = previous_environment(snapshot, 3)
    assert (verdict.phase, verdict.reason) == (
        Phase.PENDING,
        f"waiting for all of environment/c to run {short(3)} healthy (0 so far)",
    )


def test_a_quorum_out_of_reach_joins_each_failures_reason() -> None:
    snapshot = build(
        healthy("a", 3, "failure"), healthy("b", 3, "failure"), Env("prod", active=1, proposed=3)
    )
    snapshot = waiting_for(snapshot, UpstreamGroup(indices=(0, 1), require=1))
    verdict = previous_environment(snapshot, 2)
    assert (verdict.phase, verdict.reason) == (
        Phase.FAILURE,
        f"waiting for 1 of environment/a, environment/b to run {short(3)} healthy (0 so far);"
        f" health failed on {running('environment/a', 3)};"
        f" health failed on {running('environment/b', 3)}",
    )
