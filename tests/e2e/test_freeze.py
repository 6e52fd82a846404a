"""A freeze end to end with the local SCM: set through the API during a promotion, it holds
the promotion (its check on the PR says why), survives a restart (a ledger note in git),
is listed, and once lifted the promotion merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.wiring import Daemon
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

from .test_local_promotion import active_dry, env_view, set_status, wait_state

DEV = "environment/dev"


def freeze_check(client: TestClient, head: str) -> dict[str, Any] | None:
    runtime = client.runtime  # type: ignore[attr-defined]
    repo = runtime.config.repository("gitops")
    found = runtime.plugins["local"].get_commit_statuses(repo=repo, sha=head)
    return next((s for s in found if s.key == "promoter/freeze"), None)


PEOPLE = {"ada": ["role: admin"], "bob": ["role: admin"], "olga": ["role: operator"]}
"""Two admins who freeze and unfreeze, an operator who may not; the tokenless loopback
caller (``local``, an admin) plays CI."""


def start(gitops: GitOpsRepo, state: Path) -> tuple[Daemon, TestClient]:
    access = access_yaml(state.parent / f"{state.name}-tokens", PEOPLE, anonymous="admin")
    daemon = Daemon(local_config(gitops.path, state, access=access))
    client = TestClient(daemon.app)
    client.__enter__()
    client.runtime = daemon.runtime  # type: ignore[attr-defined]
    return daemon, client


def test_a_freeze_set_during_a_promotion_holds_it_until_lifted(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    _, client = start(gitops, tmp_path / "state")
    try:
        wait_state(client, "environment/prod", "up-to-date")
        before = active_dry(client, DEV)
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := env_view(client, DEV))["pullRequest"] and e, what="a PR")
        head = env["proposed"]["hydratedSha"]

        refused = client.post(
            "/api/v1/freeze", json={"strategy": "guestbook"}, headers=bearer("ada")
        )
        assert refused.status_code == 422  # a freeze needs a reason
        operator = client.post(
            "/api/v1/freeze",
            json={"strategy": "guestbook", "reason": "mine"},
            headers=bearer("olga"),
        )
        assert operator.status_code == 403  # a freeze is an admin's
        named = client.post(
            "/api/v1/freeze",
            json={"strategy": "guestbook", "reason": "x", "user": "mallory"},
            headers=bearer("ada"),
        )
        assert named.status_code == 422  # who freezes is the caller, never a name in the body
        frozen = client.post(
            "/api/v1/freeze",
            json={"strategy": "guestbook", "reason": "incident 42"},
            headers=bearer("ada"),
        )
        assert frozen.status_code == 200, frozen.text
        assert frozen.json()["scope"] == "strategy guestbook"
        set_status(client, head, "ci")  # the gate that was missing turns green

        blocked = wait_for(
            lambda: (
                (e := env_view(client, DEV))["state"] == "blocked"
                and "frozen by ada" in e["reason"]
                and e
            ),
            what="dev held by the freeze",
        )
        assert "incident 42 (strategy guestbook)" in blocked["reason"]
        assert blocked["freezes"][0]["by"] == "ada"
        check = wait_for(lambda: freeze_check(client, head), what="the freeze check")
        assert check.phase.value == "pending"
        assert active_dry(client, DEV) == before
        listed = client.get("/api/v1/freezes").json()["freezes"]
        assert [f["reason"] for f in listed] == ["incident 42"]
        audit = client.get("/api/v1/audit", params={"action": "freeze"}).json()["entries"]
        assert {(e["who"], e["outcome"], e["status"]) for e in audit} == {
            ("ada", "failed", 422),
            ("olga", "refused", 403),
            ("ada", "allowed", 200),
        }
    finally:
        client.__exit__(None, None, None)

    # A restart with an empty state dir reads the freeze back from git (the local SCM's PRs
    # and statuses live in the state dir: CI reports again).
    _, client = start(gitops, tmp_path / "state-again")
    try:
        env = wait_for(lambda: (e := env_view(client, DEV)).get("pullRequest") and e, what="PR")
        head = env["proposed"]["hydratedSha"]
        set_status(client, head, "ci")
        wait_for(
            lambda: "frozen by ada" in env_view(client, DEV)["reason"], what="frozen after restart"
        )
        assert active_dry(client, DEV) == before
        nope = client.post("/api/v1/unfreeze", json={"strategy": "nope"}, headers=bearer("bob"))
        assert nope.status_code == 404
        lifted = client.post(
            "/api/v1/unfreeze", json={"strategy": "guestbook"}, headers=bearer("bob")
        )
        assert lifted.status_code == 200, lifted.text
        wait_for(lambda: active_dry(client, DEV) == change, what="dev promoted once unfrozen")
        check = wait_for(
            lambda: (
                (s := freeze_check(client, head)) is not None and s.phase.value == "success" and s
            ),
            what="the freeze check green",
        )
        assert check.description == "no freeze on this commit"
        again = client.post(
            "/api/v1/unfreeze", json={"strategy": "guestbook"}, headers=bearer("bob")
        )
        assert again.status_code == 404  # not frozen any more
    finally:
        client.__exit__(None, None, None)
    notes = git(gitops.path, "notes", "--ref", "promoter.ledger", "list")
    assert notes  # the freeze and its log live in the repository's ledger
    logged = [
        line
        for blob in notes.split()[::2]
        for line in [git(gitops.path, "cat-file", "-p", blob)]
        if "freeze_log" in line and "incident 42" in line
    ]
    assert logged and '"by":"bob"' in logged[0] and '"action":"unfreeze"' in logged[0]


def test_freeze_and_unfreeze_need_credentials_off_loopback(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state", host="0.0.0.0")
    daemon = Daemon(config)
    with TestClient(daemon.app) as client:
        answer = client.post("/api/v1/freeze", json={"reason": "x"})
        assert answer.status_code == 401
        assert client.post("/api/v1/unfreeze", json={}).status_code == 401
