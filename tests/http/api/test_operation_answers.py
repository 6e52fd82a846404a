"""The API's answers to the manual operations, byte for byte: the typed results of the
``Operations`` port, in camelCase and in their fields' order (as the CLI reads them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from promoter.daemon import (
    ApproveChangeResult,
    ApproveResult,
    HoldResult,
    MergeResult,
    PinResult,
    PromoteResult,
    ReleaseResult,
    RevertResult,
    UnpinResult,
)
from promoter.http import AccessControl, Api
from promoter.state.audit_entry import AuditEntry

DEV, PROD = "environment/dev", "environment/prod"
A, B = "a" * 40, "b" * 40


class Answers:
    """An ``Operations`` port answering what the daemon answers for a two-environment
    strategy, whatever it is asked."""

    def revert(self, strategy: str, environment: str, *, to: str | None, by: str) -> RevertResult:
        return RevertResult(reverting=DEV, to=A, from_=B)

    def hold(
        self, strategy: str, environment: str, *, dry_sha: str | None, reason: str, by: str
    ) -> HoldResult:
        return HoldResult(held=B, environments=(DEV, PROD), reason=reason)

    def release(
        self, strategy: str, environment: str, *, dry_sha: str | None, by: str, revert_holds: bool
    ) -> ReleaseResult:
        return ReleaseResult(
            released=(B,), environments=(DEV, PROD), unpaused=DEV, paused_for="a second failure"
        )

    def promote(self, strategy: str, environment: str, *, reason: str, by: str) -> PromoteResult:
        return PromoteResult(promoted=A, environment=PROD, pr=7)

    def merge(self, strategy: str, environment: str, *, by: str | None) -> MergeResult:
        return MergeResult(merged=8, environment=DEV, dry_sha=A, revert=True)

    def approve(self, strategy: str, environment: str, *, user: str) -> ApproveResult:
        return ApproveResult(approved=9, environment=PROD, user=user)

    def pin(self, strategy: str, environment: str, *, dry_sha: str, reason: str) -> PinResult:
        return PinResult(pinned=A, environment=PROD, reason=reason)

    def unpin(self, strategy: str, environment: str) -> UnpinResult:
        return UnpinResult(unpinned=PROD)

    def approve_change(self, strategy: str, *, dry_sha: str) -> ApproveChangeResult:
        return ApproveChangeResult(approved=A, environments=())


class Views:
    """The ``Views`` port, as far as the operations use it: no strategy configured."""

    def strategy(self, name: str) -> None:
        return None


class Audit(list[AuditEntry]):
    def record(self, entry: AuditEntry) -> bool:
        self.append(entry)
        return True


class Commands:
    """The ``Commands`` port, as far as the operations use it."""

    def __init__(self) -> None:
        self.operations = Answers()
        self.enqueued: list[list[str]] = []
        self.audit = Audit()

    def enqueue(self, keys: list[str]) -> None:
        self.enqueued.append(keys)


@pytest.fixture
def client() -> Iterator[TestClient]:
    api = Api(views=Views(), commands=Commands(), access=AccessControl.local())  # type: ignore[arg-type]
    with TestClient(Starlette(routes=api.routes())) as client:
        yield client


@pytest.mark.parametrize(
    ("operation", "body", "answer"),
    [
        ("revert", {}, f'{{"reverting":"{DEV}","to":"{A}","from":"{B}"}}'),
        (
            "hold",
            {"reason": "bad build"},
            f'{{"held":"{B}","environments":["{DEV}","{PROD}"],"reason":"bad build"}}',
        ),
        (
            "release",
            {},
            f'{{"released":["{B}"],"environments":["{DEV}","{PROD}"],"unpaused":"{DEV}",'
            '"pausedFor":"a second failure"}',
        ),
        ("promote", {"reason": "hotfix"}, f'{{"promoted":"{A}","environment":"{PROD}","pr":7}}'),
        ("merge", {}, f'{{"merged":8,"environment":"{DEV}","drySha":"{A}","revert":true}}'),
        ("approve", {}, f'{{"approved":9,"environment":"{PROD}","user":"local"}}'),
        (
            "pin",
            {"drySha": A, "reason": "freeze"},
            f'{{"pinned":"{A}","environment":"{PROD}","reason":"freeze"}}',
        ),
        ("unpin", {}, f'{{"unpinned":"{PROD}"}}'),
        ("approve-change", {"drySha": A}, f'{{"approved":"{A}","environments":[]}}'),
    ],
)
def test_each_operation_answers_its_fields_in_camel_case_and_in_order(
    client: TestClient, operation: str, body: dict[str, Any], answer: str
) -> None:
    response = client.post(
        f"/api/v1/strategies/guestbook/{operation}", json={"environment": "dev", **body}
    )
    assert response.status_code == 200
    assert response.content == answer.encode()
