"""A plugin writing to stdout what is not a protocol message: the call fails at once, saying so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from promoter.config import ExternalPlugin, Repository, ScmProvider
from promoter.errors import TemporaryError
from scm_plugins.external import ExternalScm

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]


@pytest.mark.parametrize(
    "garbage",
    [
        "DEBUG looking for the pull request",
        '{"id": 2, "result": null}',  # JSON naming the call, but not JSON-RPC 2.0
    ],
)
def test_a_line_that_is_not_a_protocol_message_fails_the_call_at_once_with_the_line(
    tmp_path: Path, garbage: str
) -> None:
    plugin = ExternalPlugin(command=MISBEHAVING, settings={"garbage": garbage}, timeout=10.0)
    host = ExternalScm(provider=ScmProvider(name="ext", plugin=plugin), state_dir=str(tmp_path))
    repo = Repository(name="r", url=str(tmp_path), scm_provider="ext")
    try:
        with pytest.raises(TemporaryError, match="not a protocol message") as failed:
            host.find_open_pull_request(repo=repo, head="a", base="b")  # not its 10 s limit
        assert garbage in str(failed.value)
        assert host.get_commit_statuses(repo=repo, sha="a" * 40) == []  # it answers again
    finally:
        host.close()
