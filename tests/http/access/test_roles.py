"""Every write needs its role, on the environments it touches, and each attempt is in the
audit under the caller's name: a person acting outside their role is refused (403) and
nothing changes; a person in their role gets past the access checks (the operation may
still be refused for its own reasons, e.g. nothing to approve)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.wiring import Daemon
from tests.e2e.test_revert import AUTO_REVERT, Harness, reverted
from tests.people import access_yaml, bearer
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

DEV, STAGING, PROD = ENVIRONMENTS
PEOPLE = {
    "vic": ["role: viewer"],
    "olga": ["role: operator"],
    "abe": ["role: approver"],
    "ada": ["role: admin"],
    "pat": ["role: approver, environments: [prod]"],
    "dan": ["role: operator, environments: [dev]"],
    "sam": ["role: operator, strategies: [other-*]"],
}
ROLE_OF = {"vic": "viewer", "olga": "operator", "abe": "approver", "ada": "admin"}
ALLOWED = {
    "operator": {"operator", "admin"},
    "approver": {"approver", "admin"},
    "admin": {"admin"},
}
"""The role a write needs -> the roles (of the four people above) that may do it."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, GitOpsRepo]]:
    root = tmp_path_factory.mktemp("roles")
    gitops = GitOpsRepo.create(root)
    config = local_config(gitops.path, root / "state", access=access_yaml(root / "tokens", PEOPLE))
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        wait_for(lambda: dev(client).get("proposed"), what="a first reconcile")
        yield client, gitops


def dev(client: TestClient) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook", headers=bearer("vic")).json()
    env: dict[str, Any] = view["environments"][0]
    return env


def writes(gitops: GitOpsRepo) -> list[tuple[str, str, dict[str, Any], str]]:
    """(action, path, body, role needed) for every write of the API."""
    op = "/api/v1/strategies/guestbook/"
    main, proposed = gitops.tip("main"), gitops.tip("environment/dev-next")
    return [
        ("hold", op + "hold", {"environment": "dev", "reason": "freeze"}, "operator"),
        ("release", op + "release", {"environment": "dev"}, "operator"),
        ("refresh", "/api/v1/refresh", {"strategy": "guestbook"}, "operator"),
        ("pin", op + "pin", {"environment": "dev", "drySha": main, "reason": "r"}, "operator"),
        ("unpin", op + "unpin", {"environment": "dev"}, "operator"),
        ("revert", op + "revert", {"environment": "dev"}, "operator"),
        (
            "set-status",
            f"/api/v1/repositories/gitops/commits/{proposed}/statuses",
            {"key": "lint", "phase": "pending"},
            "operator",
        ),
        ("approve", op + "approve", {"environment": "dev"}, "approver"),
        ("merge", op + "merge", {"environment": "dev"}, "approver"),
        ("approve-change", op + "approve-change", {"environment": "*", "drySha": main}, "approver"),
        ("promote", op + "promote", {"environment": "dev", "reason": "hotfix"}, "admin"),
        (
            "freeze",
            "/api/v1/freeze",
            {"strategy": "guestbook", "environment": "prod", "reason": "release week"},
            "admin",
        ),
        ("unfreeze", "/api/v1/unfreeze", {"strategy": "guestbook", "environment": "prod"}, "admin"),
    ]


ACTIONS = [
    "hold",
    "release",
    "refresh",
    "pin",
    "unpin",
    "revert",
    "set-status",
    "approve",
    "merge",
    "approve-change",
    "promote",
    "freeze",
    "unfreeze",
]


def last_entry(client: TestClient, who: str, action: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        params = {"who": who, "action": action, "limit": "1"}
        entries = client.get("/api/v1/audit", params=params, headers=bearer("ada")).json()
        return entries["entries"][0] if entries["entries"] else None

    return wait_for(found, what=f"{who}'s {action} in the audit")


@pytest.mark.parametrize("person", sorted(ROLE_OF))
@pytest.mark.parametrize("action", ACTIONS)
def test_each_write_needs_its_role(
    served: tuple[TestClient, GitOpsRepo], action: str, person: str
) -> None:
    client, gitops = served
    _, path, body, needed = next(w for w in writes(gitops) if w[0] == action)
    holds = dev(client)["holds"]
    answer = client.post(path, json=body, headers=bearer(person))
    entry = last_entry(client, person, action)
    assert entry["status"] == answer.status_code and entry["via"] == "token"
    if ROLE_OF[person] in ALLOWED[needed]:
        assert answer.status_code not in (401, 403), answer.text
        assert entry["outcome"] in ("allowed", "failed")
    else:
        assert answer.status_code == 403, answer.text
        assert f"{person} needs the {needed} role" in answer.json()["error"]
        assert entry["outcome"] == "refused"
        assert dev(client)["holds"] == holds


@pytest.mark.parametrize(
    ("person", "action", "environment", "refused"),
    [
        ("pat", "approve", "dev", True),
        ("pat", "approve", "prod", False),
        ("pat", "approve", "environment/prod", False),
        ("dan", "hold", "dev", False),
        ("dan", "hold", "prod", True),
        ("dan", "release", "dev", True),  # a release lifts holds in staging and prod too
        ("dan", "pin", "environment/dev", False),
        ("sam", "hold", "dev", True),
        ("dan", "freeze", "dev", True),  # a freeze needs admin, even on dan's own environment
    ],
)
def test_a_role_reaches_only_its_strategies_and_environments(
    served: tuple[TestClient, GitOpsRepo],
    person: str,
    action: str,
    environment: str,
    refused: bool,
) -> None:
    client, gitops = served
    _, path, body, _ = next(w for w in writes(gitops) if w[0] == action)
    answer = client.post(path, json={**body, "environment": environment}, headers=bearer(person))
    assert (answer.status_code == 403) is refused, answer.text
    outcome = last_entry(client, person, action)["outcome"]
    assert outcome in (("refused",) if refused else ("allowed", "failed"))


def test_a_viewer_reads_and_a_stranger_does_not(served: tuple[TestClient, GitOpsRepo]) -> None:
    client, _ = served
    assert client.get("/api/v1/strategies", headers=bearer("vic")).status_code == 200
    assert client.get("/api/v1/strategies/guestbook").status_code == 401
    assert client.get("/api/v1/strategies").status_code == 401
    other = client.get("/api/v1/strategies", headers=bearer("sam")).json()
    assert other == {"strategies": []}  # sam may act on other-* only
    assert client.get("/api/v1/strategies/guestbook", headers=bearer("sam")).status_code == 403
    assert client.get("/api/v1/audit", headers=bearer("sam")).status_code == 200
    assert (
        client.get(
            "/api/v1/audit", params={"strategy": "guestbook"}, headers=bearer("sam")
        ).status_code
        == 403
    )


def test_a_write_without_credentials_is_refused_and_audited(
    served: tuple[TestClient, GitOpsRepo],
) -> None:
    client, _ = served
    answer = client.post(
        "/api/v1/strategies/guestbook/hold", json={"environment": "dev", "reason": "anon"}
    )
    assert answer.status_code == 401
    entry = last_entry(client, "local", "hold")
    assert (entry["outcome"], entry["via"]) == ("refused", "local")


def test_whoami_names_the_caller_and_its_grants(served: tuple[TestClient, GitOpsRepo]) -> None:
    client, _ = served
    me = client.get("/api/v1/whoami", headers=bearer("pat")).json()
    assert me["name"] == "pat" and me["via"] == "token"
    assert me["roles"] == [{"role": "approver", "strategies": [], "environments": ["prod"]}]
    assert client.get("/api/v1/whoami", headers={"authorization": "Bearer nope"}).status_code == 401


@pytest.fixture
def harness(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Harness]:
    """A loopback daemon whose tokenless caller is the local admin (it plays CI and
    health), with olga an operator and ada an admin."""
    people = {"olga": ["role: operator"], "ada": ["role: admin"]}
    access = access_yaml(tmp_path / "tokens", people, anonymous="admin")
    config = local_config(gitops.path, tmp_path / "state", auto_revert=AUTO_REVERT, access=access)
    with Harness(gitops, config) as h:
        wait_for(lambda: h.env(PROD)["state"] == "up-to-date", what="a first reconcile")
        for branch in ENVIRONMENTS:
            h.status(gitops.tip(branch), "health")
        good = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        h.promote(good, ENVIRONMENTS)
        wait_for(lambda: h.env(PROD)["lastHealthy"], what="prod recorded healthy")
        h.good = good  # type: ignore[attr-defined]
        yield h


def test_only_an_admin_releases_the_hold_a_revert_set(harness: Harness) -> None:
    h = harness
    bad = h.gitops.change("1.2.0", "Bump guestbook to 1.2.0")
    reverted(h, bad)
    wait_for(lambda: h.env(PROD)["holds"], what="the revert's hold in prod")
    notes = git(h.gitops.path, "for-each-ref", "refs/notes/promoter.ledger")
    refused = h.client.post(
        "/api/v1/strategies/guestbook/release",
        json={"environment": "staging"},
        headers=bearer("olga"),
    )
    assert refused.status_code == 403, refused.text
    assert "set by a revert" in refused.json()["error"] and "admin" in refused.json()["error"]
    assert git(h.gitops.path, "for-each-ref", "refs/notes/promoter.ledger") == notes
    assert [x["drySha"] for x in h.env(PROD)["holds"]] == [bad]
    released = h.client.post(
        "/api/v1/strategies/guestbook/release",
        json={"environment": "staging"},
        headers=bearer("ada"),
    )
    assert released.status_code == 200, released.text
    assert released.json()["released"] == [bad]
    wait_for(lambda: not h.env(PROD)["holds"], what="the holds released")
