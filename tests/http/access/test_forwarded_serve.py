"""Forwarded headers through ``promoter serve`` itself, a real uvicorn on 127.0.0.1: a
local process that claims to come through the trusted proxy is nobody, a sidecar proxy
on loopback is believed, and the audit records the peer and the forwarded client apart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from promoter.cli.sandbox import sandbox_config
from promoter.http import free_port
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, wait_for

pytestmark = pytest.mark.timeout(180)
"""A daemon's process starts in seconds, over the 10 s a test has under ``make mutate``."""

HOLD = "/api/v1/strategies/guestbook/hold"
PROXY = "10.20.30.40"
"""The trusted proxy's address, on another machine."""
BOSS = {"x-forwarded-user": "boss", "x-forwarded-groups": "sre"}


def access(tmp_path: Path, trusted: str) -> str:
    """A viewer's token (the auditor), and admins named by a proxy trusted from ``trusted``."""
    return access_yaml(
        tmp_path / "tokens",
        {"auditor": ["role: viewer"]},
        more=f"""\
    - {{groups: [sre], role: admin}}
  proxy:
    userHeader: X-Forwarded-User
    groupsHeader: X-Forwarded-Groups
    trustedAddresses: [{trusted}]""",
    )


@contextmanager
def serve(tmp_path: Path, trusted: str) -> Iterator[httpx.Client]:
    """``promoter serve`` as a process, as an operator starts it (with uvicorn's own
    ``FORWARDED_ALLOW_IPS`` set to trust everyone, which must change nothing); a client of
    it on 127.0.0.1."""
    gitops = GitOpsRepo.create(tmp_path)
    port = free_port()
    config = tmp_path / "promoter.yaml"
    daemon = {"port": port, "pollInterval": "0.2s"}
    config.write_text(
        sandbox_config(
            gitops.path, tmp_path / "state", daemon=daemon, access=access(tmp_path, trusted)
        )
    )
    log = tmp_path / "daemon.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "promoter.cli", "serve", "--config", str(config)],
            stdout=out,
            stderr=out,
            env={**os.environ, "FORWARDED_ALLOW_IPS": "*"},
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        wait_for(lambda: "promoter started" in log.read_text(), what="the daemon to start")
        wait_for(lambda: reconciled(client), what="a first reconcile")
        yield client
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def reconciled(client: httpx.Client) -> object:
    """Whether the daemon answers and has reconciled once (it listens after it starts)."""
    try:
        answer = client.get("/api/v1/strategies/guestbook", headers=bearer("auditor"))
    except httpx.TransportError:
        return None
    return answer.json().get("reconciledAt")


def audit(client: httpx.Client) -> list[dict[str, Any]]:
    answer = client.get("/api/v1/audit?action=hold", headers=bearer("auditor"))
    assert answer.status_code == 200, answer.text
    entries: list[dict[str, Any]] = answer.json()["entries"]
    return entries


def test_a_local_process_claiming_the_trusted_proxys_address_is_not_the_proxys_user(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, f"{PROXY}/32") as client:
        forged = {**BOSS, "x-forwarded-for": PROXY, "x-real-ip": PROXY}
        answer = client.post(HOLD, json={"environment": "prod", "reason": "mine"}, headers=forged)
        assert answer.status_code == 401, answer.text
        assert "trusted proxy" in answer.json()["error"]
        (entry,) = audit(client)
        assert (entry["who"], entry["outcome"], entry["address"], entry["forwarded"]) == (
            "unknown",
            "refused",
            "127.0.0.1",
            None,
        )


def test_a_sidecar_proxy_on_loopback_is_believed_and_the_audit_keeps_both_addresses(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, "127.0.0.1/32") as client:
        # nginx and oauth2-proxy append the address they saw; what the browser claimed is
        # left of it, and never taken for the client
        sent = {**BOSS, "x-forwarded-for": "198.51.100.1, 203.0.113.5"}
        answer = client.post(HOLD, json={"environment": "prod", "reason": "incident"}, headers=sent)
        assert answer.status_code == 200, answer.text
        (entry,) = audit(client)
        assert (entry["who"], entry["via"], entry["outcome"]) == ("boss", "proxy", "allowed")
        assert (entry["address"], entry["forwarded"]) == ("127.0.0.1", "203.0.113.5")
