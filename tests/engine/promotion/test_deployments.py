"""SCM deployments (pure): created for what an environment runs, green with its gates,
failed when a gate fails or a revert of it is in the ledger, and never reported twice."""

from __future__ import annotations

from datetime import timedelta

from promoter.engine import (
    CreateDeployment,
    Deployment,
    DeploymentTarget,
    SetDeploymentStatus,
    decide,
)
from promoter.engine.core.ledger_state import EnvLedger, QueueAttempt
from promoter.engine.core.snapshot import Snapshot

from ..reverts.test_revert import edit, revert_of
from ..strategies import NOW, Env, build, dry, hydrated


def staging(state: str = "in_progress", name: str | None = "staging", **env: object) -> Snapshot:
    snapshot = build(
        Env(
            "staging",
            active=5,
            proposed=5,
            active_keys=("health",),
            active_statuses=env.pop("health", {"health": "pending"}),
        )  # type: ignore[arg-type]
    )
    record = Deployment(
        id="77",
        hydrated_sha=hydrated("environment/staging", 5),
        dry_sha=dry(5),
        state=state,  # type: ignore[arg-type]
        at=NOW - timedelta(minutes=1),
    )
    ledger = env.pop("ledger", EnvLedger(deployments=(record,)))
    return edit(snapshot, 0, deployment=DeploymentTarget(environment=name), ledger=ledger, **env)


def of(snapshot: Snapshot) -> list[object]:
    return [
        a for a in decide(snapshot).actions if isinstance(a, CreateDeployment | SetDeploymentStatus)
    ]


def test_what_an_environment_runs_without_a_deployment_gets_one() -> None:
    [made] = of(staging(ledger=EnvLedger()))
    assert isinstance(made, CreateDeployment)
    assert (made.sha, made.supersedes) == (hydrated("environment/staging", 5), None)


def test_it_turns_green_with_the_active_gates_and_is_not_reported_twice() -> None:
    [green] = of(staging(health={"health": "success"}))
    assert isinstance(green, SetDeploymentStatus) and green.state == "success"
    assert of(staging("success", health={"health": "success"})) == []
    assert of(staging()) == []  # still waiting for health: nothing to say


def test_a_revert_of_it_fails_it_even_with_green_gates() -> None:
    ledger = EnvLedger(
        deployments=staging().environments[0].ledger.deployments,
        reverts=(revert_of("environment/staging", 5, 3),),
    )
    [failed] = of(staging("success", health={"health": "success"}, ledger=ledger))
    assert isinstance(failed, SetDeploymentStatus) and failed.state == "failure"
    assert "reverted out of environment/staging" in failed.description


def test_nothing_is_reported_where_deployments_are_off() -> None:
    assert of(staging(name=None, ledger=EnvLedger())) == []


def test_a_commit_a_merge_queue_merged_links_to_the_promotion_pr_the_promoter_enqueued() -> None:
    attempt = QueueAttempt(
        number=12,
        head_sha="a" * 40,
        attempts=1,
        enqueued_at=NOW - timedelta(minutes=5),
        dry_sha=dry(5),
        url="https://scm.example/pr/12",
    )
    [made] = of(staging(ledger=EnvLedger(queue=attempt)))
    assert isinstance(made, CreateDeployment)
    assert (made.pr, made.pr_url) == (12, "https://scm.example/pr/12")
    for other in (
        attempt.model_copy(update={"dry_sha": dry(4)}),  # another change's attempt
        attempt.model_copy(update={"dequeued_at": NOW}),  # taken out: not the queue's merge
    ):
        [made] = of(staging(ledger=EnvLedger(queue=other)))
        assert isinstance(made, CreateDeployment) and made.pr is None
