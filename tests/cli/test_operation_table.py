"""The table of operations makes the writes' commands: one for each row, whose arguments
go to the route and the JSON body the daemon's API takes for that row, and one POST route
of the daemon's app for each row, each needing the row's role."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route

from promoter.cli.commands import subcommands
from promoter.cli.main import parser
from promoter.cli.remote import request_of
from promoter.cli.sandbox import GitOpsRepo, sandbox_config
from promoter.config import OPERATIONS, ROLES, operation
from promoter.config.loader import parse_config
from promoter.wiring import Daemon

REQUESTS: list[tuple[list[str], str, dict[str, Any]]] = [
    (
        ["set-status", "gitops", "abc1234", "ci", "success", "--target-url", "https://ci/1"],
        "/api/v1/repositories/gitops/commits/abc1234/statuses",
        {"key": "ci", "phase": "success", "url": "https://ci/1"},
    ),
    (
        ["set-status", "gitops", "abc1234", "ci", "pending", "--force", "--description", "d"],
        "/api/v1/repositories/gitops/commits/abc1234/statuses",
        {"key": "ci", "phase": "pending", "description": "d", "force": True},
    ),
    (
        ["hold", "guestbook", "dev", "--reason", "bad build", "--dry-sha", "abc"],
        "/api/v1/strategies/guestbook/hold",
        {"environment": "dev", "drySha": "abc", "reason": "bad build"},
    ),
    (
        ["revert", "guestbook", "prod", "--to", "abc"],
        "/api/v1/strategies/guestbook/revert",
        {"environment": "prod", "to": "abc"},
    ),
    (
        ["pin", "guestbook", "staging", "abc", "--reason", "stay"],
        "/api/v1/strategies/guestbook/pin",
        {"environment": "staging", "drySha": "abc", "reason": "stay"},
    ),
    (["merge", "guestbook", "prod"], "/api/v1/strategies/guestbook/merge", {"environment": "prod"}),
    (
        ["approve-change", "guestbook", "abc"],
        "/api/v1/strategies/guestbook/approve-change",
        {"environment": "*", "drySha": "abc"},
    ),
    (["refresh"], "/api/v1/refresh", {}),
    (["refresh", "--strategy", "guestbook"], "/api/v1/refresh", {"strategy": "guestbook"}),
    (["freeze", "--reason", "release week"], "/api/v1/freeze", {"reason": "release week"}),
    (
        ["unfreeze", "guestbook", "prod"],
        "/api/v1/unfreeze",
        {"strategy": "guestbook", "environment": "prod"},
    ),
]


@pytest.mark.parametrize(("argv", "path", "body"), REQUESTS)
def test_a_commands_arguments_make_its_rows_request(
    argv: list[str], path: str, body: dict[str, Any]
) -> None:
    args = parser().parse_args(argv)
    row = operation(args.command)
    assert row is not None
    assert request_of(row, args) == (path, body)


def test_each_row_is_a_command_a_post_route_and_a_role(tmp_path: Path) -> None:
    names = [op.name for op in OPERATIONS]
    assert set(names) <= set(subcommands(parser()))
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(parse_config(sandbox_config(gitops.path, tmp_path / "state")))
    posts = {r.path for r in daemon.app.routes if isinstance(r, Route) and "POST" in r.methods}
    assert [op.path for op in OPERATIONS if op.path not in posts] == []
    assert sorted(ROLES) == sorted(names)
