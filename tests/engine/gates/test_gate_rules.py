"""Rules 3 and 4 by example: a proposed gate not success blocks the merge, an environment
waits for the previous one to run the change healthy, and the previous environment's check
on the PR says what the API says (their edges are in ``test_gate_edges.py``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promoter.engine import (
    PREVIOUS_ENVIRONMENT_KEY,
    EnvState,
    MergePullRequest,
    SetCommitStatus,
    decide,
)
from promoter.models import Phase

from ..strategies import Env, build, hydrated, short, status
from ..test_decide import actions, only, promotable

# --- rule 3: proposed gates -------------------------------------------------------------


PENDING_CI = "waiting for ci: report it on {h}, the head of environment/dev-next (dry {p})"


@pytest.mark.parametrize(
    ("statuses", "phase", "reason"),
    [
        ({}, Phase.PENDING, PENDING_CI),
        ({"ci": "pending"}, Phase.PENDING, PENDING_CI),
        ({"ci": "failure"}, Phase.FAILURE, "ci failed on {h} (environment/dev-next, dry {p})"),
    ],
)
def test_a_proposed_gate_that_is_not_success_blocks_the_merge(
    statuses: dict[str, str], phase: Phase, reason: str
) -> None:
    decision = decide(build(promotable(proposed_statuses=statuses)))
    verdict = decision.environments[0]
    assert verdict.state is EnvState.BLOCKED
    proposed = hydrated("environment/dev-next", 3)[:7]
    assert verdict.reason == reason.format(p=short(3), h=proposed)
    assert [(g.name, g.phase) for g in verdict.gates] == [("ci", phase)]
    assert actions(decision, MergePullRequest) == []


def test_a_key_listed_globally_and_per_environment_is_one_gate() -> None:
    verdict = decide(build(promotable(proposed_keys=("ci", "ci")))).environments[0]
    assert [g.name for g in verdict.gates] == ["ci"]


# --- rule 4: previous environment -------------------------------------------------------


def test_an_environment_waits_until_the_previous_one_runs_the_commit() -> None:
    snapshot = build(Env("dev", active=2, proposed=2), promotable("staging", active=1, proposed=3))
    decision = decide(snapshot)
    reason = f"environment/dev is not on {short(3)} yet"
    assert decision.environments[1].reason == reason
    # Not decided yet: the PR shows no previous-environment check rather than a placeholder.
    assert actions(decision, SetCommitStatus, 1) == []
    assert actions(decision, MergePullRequest) == []


def test_a_previous_environment_check_on_the_head_says_what_the_api_says() -> None:
    dev = Env("dev", active=3, proposed=3, active_keys=("health", "promoter/argocd"))
    dev = replace(dev, active_statuses={"health": "success"})
    staging = promotable(
        "staging", proposed_statuses={"ci": "success", PREVIOUS_ENVIRONMENT_KEY: "failure"}
    )
    decision = decide(build(dev, staging))
    gate = next(g for g in decision.environments[1].gates if g.name == PREVIOUS_ENVIRONMENT_KEY)
    running = hydrated("environment/dev", 3)[:7]
    assert gate.reason == (
        f"waiting for promoter/argocd on environment/dev: report it on {running},"
        f" the commit environment/dev runs (dry {short(3)})"
    )
    published = only(decision, SetCommitStatus, 1)
    assert isinstance(published, SetCommitStatus)
    assert (published.status.phase, published.status.description) == (Phase.PENDING, gate.reason)


def test_a_previous_environment_on_a_descendant_of_the_commit_lets_it_through() -> None:
    snapshot = build(Env("dev", active=5, proposed=5), promotable("staging", active=1, proposed=3))
    decision = decide(snapshot)
    assert decision.environments[1].state is EnvState.PROMOTING
    published = only(decision, SetCommitStatus, 1)
    assert isinstance(published, SetCommitStatus)
    assert published.status.phase is Phase.SUCCESS
    assert published.status.description == f"environment/dev is on {short(5)} and healthy"


FAILED_HEALTH = "health failed on {h}, the commit environment/dev runs (dry {a})"
WAITING_HEALTH = (
    "waiting for health on environment/dev: report it on {h}, the commit environment/dev runs"
    " (dry {a})"
)


@pytest.mark.parametrize(
    ("health", "phase", "reason"),
    [
        (
            "failure",
            Phase.FAILURE,
            "health failed on {h}, the commit environment/dev runs (dry {a})",
        ),
        ("pending", Phase.PENDING, WAITING_HEALTH),
        (None, Phase.PENDING, WAITING_HEALTH),
    ],
)
def test_an_unhealthy_previous_environment_blocks_naming_the_commit_to_report_on(
    health: str | None, phase: Phase, reason: str
) -> None:
    dev = Env(
        "dev",
        active=3,
        proposed=3,
        active_keys=("health",),
        active_statuses={} if health is None else {"health": health},
    )
    decision = decide(build(dev, promotable("staging")))
    running = hydrated("environment/dev", 3)[:7]
    assert decision.environments[1].reason == reason.format(a=short(3), h=running)
    published = [
        a.status for a in actions(decision, SetCommitStatus, 1) if isinstance(a, SetCommitStatus)
    ]
    # A failure is decided and shows on the PR at once; a wait shows once decided.
    assert [(s.phase, s.description) for s in published] == (
        [(phase, decision.environments[1].reason)] if phase is Phase.FAILURE else []
    )
    assert actions(decision, MergePullRequest) == []


def test_the_previous_environment_status_is_not_written_again_when_unchanged() -> None:
    snapshot = build(Env("dev", active=3, proposed=3), promotable("staging"))
    staging = snapshot.environments[1]
    assert staging.proposed is not None
    description = f"environment/dev is on {short(3)} and healthy"
    same = (*staging.proposed.statuses, status(PREVIOUS_ENVIRONMENT_KEY, "success", description))
    proposed = staging.proposed.model_copy(update={"statuses": same})
    environments = (snapshot.environments[0], staging.model_copy(update={"proposed": proposed}))
    decision = decide(snapshot.model_copy(update={"environments": environments}))
    assert actions(decision, SetCommitStatus) == []
    assert decision.environments[1].state is EnvState.PROMOTING


def test_the_previous_environment_status_is_written_again_when_its_words_changed() -> None:
    snapshot = build(Env("dev", active=3, proposed=3), promotable("staging"))
    staging = snapshot.environments[1]
    assert staging.proposed is not None
    old = (*staging.proposed.statuses, status(PREVIOUS_ENVIRONMENT_KEY, "success", "old words"))
    proposed = staging.proposed.model_copy(update={"statuses": old})
    environments = (snapshot.environments[0], staging.model_copy(update={"proposed": proposed}))
    decision = decide(snapshot.model_copy(update={"environments": environments}))
    published = only(decision, SetCommitStatus, 1)
    assert isinstance(published, SetCommitStatus)
    assert published.status.description == f"environment/dev is on {short(3)} and healthy"


def test_the_first_environment_publishes_no_previous_environment_status() -> None:
    decision = decide(build(promotable(proposed_statuses={})))
    assert actions(decision, SetCommitStatus) == []
    assert [g.name for g in decision.environments[0].gates] == ["ci"]


def test_the_published_description_fits_the_scm_limit() -> None:
    dev = Env(
        "dev-" + "x" * 200,
        active=3,
        proposed=3,
        active_keys=("health",),
        active_statuses={"health": "failure"},
    )
    decision = decide(build(dev, promotable("staging")))
    published = only(decision, SetCommitStatus, 1)
    assert isinstance(published, SetCommitStatus)
    assert len(published.status.description) == 140
    assert published.status.description.endswith("…")
