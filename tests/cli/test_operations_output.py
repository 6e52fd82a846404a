"""Manual operations answer in plain sentences (``--json`` for scripts), and a refused
token says how to pass one."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.main import main
from promoter.cli.remote import OPERATIONS
from promoter.config.loader import load_config
from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, wait_for

TOKEN = "cli-test-api-token"


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, GitOpsRepo]]:
    """A daemon on loopback that wants a bearer token (reads as well: anonymous reads
    only when configured)."""
    monkeypatch.delenv("PROMOTER_API_TOKEN", raising=False)
    monkeypatch.delenv("PROMOTER_URL", raising=False)
    gitops = GitOpsRepo.create(tmp_path)
    (tmp_path / "token").write_text(TOKEN + "\n")
    port = free_port()
    config = tmp_path / "promoter.yaml"
    config.write_text(
        "scmProviders: [{name: local, local: {}}]\n"
        f"repositories: [{{name: gitops, url: {gitops.path}, scmProvider: local}}]\n"
        "promotionStrategies:\n"
        "  - name: guestbook\n    repository: gitops\n    proposedCommitStatuses: [{key: ci}]\n"
        "    environments: [{branch: environment/dev}, {branch: environment/staging},"
        " {branch: environment/prod}]\n"
        f"daemon: {{stateDir: {tmp_path / 'state'}, port: {port}, pollInterval: 0.1s,"
        f" apiToken: {{fromFile: {tmp_path / 'token'}}}}}\n"
    )
    server = ThreadServer(Daemon(load_config(config, resolve_secrets=True)).app, port).start()
    url = f"http://127.0.0.1:{port}"
    try:
        status = ["status", "--url", url, "--json", "--token", TOKEN]
        wait_for(lambda: run(status)[0] == 0, what="the daemon")
        yield url, gitops
    finally:
        server.stop()


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, (out.getvalue() + err.getvalue()).strip()


def test_a_write_without_the_token_says_how_to_pass_it(daemon: tuple[str, GitOpsRepo]) -> None:
    url, _ = daemon
    code, text = run(["refresh", "--url", url])
    assert code == 1
    assert "--token" in text and "PROMOTER_API_TOKEN" in text
    code, text = run(["refresh", "--url", url, "--token", "wrong-token-value"])
    assert code == 1 and "refused the token" in text
    assert run(["refresh", "--url", url, "--token", TOKEN]) == (0, "Reconciling guestbook.")


def test_operations_print_sentences_and_json_on_request(
    daemon: tuple[str, GitOpsRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, gitops = daemon
    monkeypatch.setenv("PROMOTER_API_TOKEN", TOKEN)
    proposed = gitops.tip("environment/dev-next")
    code, text = run(["set-status", "gitops", proposed, "ci", "success", "--url", url])
    assert (code, text) == (
        0,
        f"Set ci to success on {proposed[:7]} in gitops; reconciling guestbook.",
    )

    dry = gitops.tip("main")
    code, text = run(["set-status", "gitops", dry, "ci", "success", "--url", url])
    assert code == 1
    assert f"ci on {dry[:7]} would count for no environment" in text
    assert f"report ci on {proposed[:7]}, the head of environment/dev-next" in text
    forced = ["set-status", "gitops", dry, "ci", "success", "--force", "--url", url]
    assert run(forced)[0] == 0

    hold = ["hold", "guestbook", "staging", "--reason", "release freeze", "--url", url]
    code, text = run(hold)
    assert code == 0
    assert text == (
        f"Held {dry[:7]} out of environment/staging and environment/prod (reason: release freeze)."
    )
    code, text = run(["release", "guestbook", "staging", "--url", url, "--json"])
    answer = json.loads(text)
    assert answer["released"] == [dry] and answer["unpaused"] is None
    code, text = run(["release", "guestbook", "staging", "--url", url])
    assert (
        text == "No hold to release in environment/staging and environment/prod. It was not paused."
    )


@pytest.mark.parametrize(
    ("operation", "answer", "sentence"),
    [
        (
            "release",
            {
                "released": [],
                "environments": ["environment/staging"],
                "unpaused": "environment/staging",
                "pausedFor": "a second failure",
            },
            "No hold to release in environment/staging. "
            "Unpaused environment/staging (it was paused: a second failure).",
        ),
        (
            "revert",
            {"reverting": "environment/staging", "to": "a" * 40, "from": "b" * 40},
            "Reverting environment/staging from bbbbbbb back to aaaaaaa: "
            "the revert pull request is open.",
        ),
        (
            "promote",
            {"promoted": "c" * 40, "environment": "environment/prod", "pr": 7},
            "Promoted ccccccc to environment/prod past its gates (PR #7).",
        ),
    ],
)
def test_each_operation_tells_what_the_daemon_did(
    operation: str, answer: dict[str, Any], sentence: str
) -> None:
    assert OPERATIONS[operation][1](answer) == sentence
