"""The operations a person asks for, decided on a snapshot: what each refuses, and why."""

from __future__ import annotations

from promoter.engine.actions import ApproveChange, PinEnvironment
from promoter.engine.operations import Refusal, approve_change, pin
from promoter.engine.snapshot import Rollout, Snapshot

from .strategies import NOW, Env, build, dry


def blocking(snapshot: Snapshot, *indexes: int) -> Snapshot:
    """``snapshot`` with the environments at ``indexes`` holding back trailered commits."""
    environments = tuple(
        env.model_copy(update={"rollout": Rollout(tier="prod", block_trailer="Promote-Block")})
        if i in indexes
        else env
        for i, env in enumerate(snapshot.environments)
    )
    return snapshot.model_copy(update={"environments": environments})


def three() -> Snapshot:
    return build(Env("dev", active=3, proposed=3), Env("staging"), Env("prod"))


def test_a_pin_without_a_reason_is_refused_as_unprocessable() -> None:
    for reason in ("", "   "):
        assert pin(three(), 2, dry_sha=dry(0), reason=reason, now=NOW) == Refusal(
            reason="a pin needs a reason", status=422
        )


def test_a_pin_names_the_full_dry_sha_its_reason_and_when() -> None:
    assert pin(three(), 2, dry_sha=dry(3)[:7], reason="audit", now=NOW) == [
        PinEnvironment(environment=2, dry_sha=dry(3), reason="audit", since=NOW)
    ]


def test_approving_a_change_nobody_knows_is_refused_as_unprocessable() -> None:
    refusal = approve_change(blocking(three(), 2), dry_sha="f00")
    assert refusal == Refusal(
        reason="f00 does not name one known dry commit; give the full SHA", status=422
    )


def test_approving_a_change_where_no_environment_blocks_one_is_refused() -> None:
    assert approve_change(three(), dry_sha=dry(3)) == Refusal(
        reason="demo blocks no changes (no blockedChanges)", status=409
    )


def test_approving_a_change_lets_it_through_each_environment_that_blocks_it() -> None:
    assert approve_change(blocking(three(), 1, 2), dry_sha=dry(3)[:9]) == [
        ApproveChange(environment=1, dry_sha=dry(3)),
        ApproveChange(environment=2, dry_sha=dry(3)),
    ]
