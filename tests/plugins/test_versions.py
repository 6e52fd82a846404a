"""promoter.scm/v1.1 is spoken compatibly: a v1 peer sees v1 messages, a v1 plugin still works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from promoter.config import ExternalPlugin, ScmProvider
from promoter.models import PullRequest, PullRequestState
from scm_plugins.external import ExternalScm
from scm_plugins.external import messages as m
from scm_plugins.protocol import review_reader

from .scripted import write_plugin

LOCAL = [sys.executable, "-m", "scm_plugins.local", "--plugin"]


def exchange(versions: list[str], state: Path) -> dict[int, dict[str, Any]]:
    """The answers of the Python server (the local SCM's) to a promoter offering ``versions``."""
    repository = {"name": "r", "url": str(state / "r.git"), "fullPath": "r"}
    init = {"protocolVersions": versions, "provider": "p", "stateDir": str(state)}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "git/environment",
            "params": {"repository": repository},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": {}},
    ]
    done = subprocess.run(
        LOCAL,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return {a["id"]: a for a in answers}


def test_a_python_plugin_answers_a_v1_promoter_without_any_member_v1_does_not_know(
    tmp_path: Path,
) -> None:
    answers = exchange(["promoter.scm/v1"], tmp_path)
    init = answers[1]["result"]
    assert init["protocolVersion"] == "promoter.scm/v1"
    assert "events" not in init["capabilities"]
    assert "reviews" not in init["capabilities"]  # the local SCM reads reviews, in v1.1 only
    assert set(answers[2]["result"]) == {"env"}  # no expiresAt
    m.InitializeResult.model_validate(init)


def test_a_python_plugin_picks_v1_1_when_the_promoter_offers_it(tmp_path: Path) -> None:
    answers = exchange(["promoter.scm/v1.1", "promoter.scm/v1"], tmp_path)
    assert answers[1]["result"]["protocolVersion"] == "promoter.scm/v1.1"
    assert answers[1]["result"]["capabilities"]["reviews"] is True


def test_a_pull_request_goes_to_a_v1_peer_without_its_author() -> None:
    pr = PullRequest(
        id="1",
        number=1,
        head_branch="h",
        base_branch="b",
        head_sha="0" * 40,
        state=PullRequestState.OPEN,
        author="ada",
    )
    assert m.dump(pr)["author"] == "ada"
    assert "author" not in m.dump([pr], v1=True)[0]
    assert PullRequest.model_validate(m.dump(pr, v1=True)).author == ""


def test_a_plugin_that_knows_only_v1_is_served_as_before(tmp_path: Path) -> None:
    write_plugin(tmp_path, "old", version="promoter.scm/v1")
    plugin = ExternalPlugin(name="old", directory=str(tmp_path))
    host = ExternalScm(provider=ScmProvider(name="old", plugin=plugin), state_dir=str(tmp_path))
    try:
        assert host.info is not None and host.info.protocol_version == "promoter.scm/v1"
        assert host.sends_events is False
        assert host.reads_reviews is False
        assert review_reader(host) is None  # an approval gate waits, saying so
    finally:
        host.close()
