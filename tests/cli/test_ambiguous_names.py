"""An operation or a freeze on a last part two environments share (``prod`` of
``team-a/prod`` and ``team-b/prod``) prints both branches, one a line, and exits 1; the
daemon does nothing."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.main import main
from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, TEAMS, GitOpsRepo, local_config, teams_strategy, wait_for

TEAM_A, TEAM_B = TEAMS
CANDIDATES = f"candidates:\n  {TEAM_A}\n  {TEAM_B}"


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A tokenless daemon on loopback serving the ``teams`` strategy."""
    monkeypatch.delenv("PROMOTER_API_TOKEN", raising=False)
    monkeypatch.delenv("PROMOTER_URL", raising=False)
    gitops = GitOpsRepo.create(tmp_path, [*ENVIRONMENTS, *TEAMS])
    port = free_port()
    config = local_config(
        gitops.path, tmp_path / "state", extra_strategy=teams_strategy(), port=port
    )
    server = ThreadServer(Daemon(config).app, port).start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proposed(url), what="a first reconcile")
        yield url
    finally:
        server.stop()


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, (out.getvalue() + err.getvalue()).strip()


def teams(url: str) -> list[dict[str, object]]:
    code, text = run(["status", "--url", url, "--json"])
    assert code == 0, text
    found = next(s for s in json.loads(text) if s["name"] == "teams")
    environments: list[dict[str, object]] = found["environments"]
    return environments


def proposed(url: str) -> bool:
    try:
        return all(env.get("proposed") for env in teams(url))
    except (AssertionError, StopIteration, ValueError):
        return False


@pytest.mark.parametrize(
    "argv",
    [
        ["hold", "teams", "prod", "--reason", "bad build"],
        ["pin", "teams", "prod", "a" * 40, "--reason", "stay"],
        ["freeze", "teams", "prod", "--reason", "release week"],
    ],
)
def test_a_shared_last_part_prints_both_branches_and_exits_1(url: str, argv: list[str]) -> None:
    code, text = run([*argv, "--url", url])
    assert code == 1
    assert "409 'prod' names 2 environments of teams" in text
    assert text.endswith(CANDIDATES)
    code, text = run(["unfreeze", "teams", TEAM_A, "--url", url])
    assert code == 1 and "404" in text  # nothing was frozen
    code, text = run(["release", "teams", TEAM_A, "--url", url])
    assert (code, text) == (0, f"No hold to release in {TEAM_A} and {TEAM_B}. It was not paused.")


def test_the_whole_branch_is_held(url: str) -> None:
    code, text = run(["hold", "teams", TEAM_B, "--reason", "bad build", "--url", url])
    assert code == 0, text
    assert text.endswith(f"out of {TEAM_B} (reason: bad build).")
