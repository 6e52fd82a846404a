"""Every line of a plugin accounted for: unknown ids, garbage, invalid events and a noisy stderr
are counted, and logged at most once a minute with a short sample, never a payload or a
secret; a call whose answer will not come fails at once instead of waiting its limit."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from promoter.config import ExternalPlugin, Repository, ScmProvider
from promoter.errors import TemporaryError
from promoter.metrics import sample
from scm_plugins.external import ExternalScm
from scm_plugins.external.errors import CallTimedOut
from scm_plugins.external.stderr import BURST
from tests.support import wait_for

from .test_events import Sink

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]
SHA = "a" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def host_of(tmp_path: Path, clock: Clock, name: str = "ext", **settings: Any) -> ExternalScm:
    plugin = ExternalPlugin(command=MISBEHAVING, settings=settings, timeout=60.0)
    return ExternalScm(
        provider=ScmProvider(name=name, plugin=plugin), state_dir=str(tmp_path), clock=clock
    )


def lines(provider: str, kind: str) -> float:
    return sample("promoter_plugin_lines_total", {"provider": provider, "kind": kind})


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == message]


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(name="gitops", url=str(tmp_path), scm_provider="ext")


def test_an_answer_naming_an_id_no_call_waits_for_fails_the_call_at_once_logged_once(
    tmp_path: Path, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    host = host_of(tmp_path, Clock(), wrongId=["pullRequests/findOpen"])
    before = lines("ext", "unknown_id")
    try:
        with caplog.at_level(logging.DEBUG, logger="promoter.plugins"):
            for _ in range(4):  # more than the time-outs that make a plugin hung
                with pytest.raises(TemporaryError, match="which no call waits for") as failed:
                    host.find_open_pull_request(repo=repo, head="a", base="b")
                assert not isinstance(failed.value, CallTimedOut)  # not its 60 s limit
        assert host.get_commit_statuses(repo=repo, sha=SHA) == []
        assert host.starts == 1
    finally:
        host.close()
    assert lines("ext", "unknown_id") == before + 4
    [record] = logged(caplog, "plugin answered an id no call waits for")
    assert (record.provider, record.plugin, record.id) == ("ext", "misbehaving", "1002")  # type: ignore[attr-defined]


GARBAGE = (
    "DEBUG token=s3cr3t-token-0123456789 fetching https://bot:hunter2-hunter2@scm.example/x "
    + "y" * 5000
)


def test_a_flood_of_malformed_lines_is_counted_and_logged_once_a_minute_with_a_short_sample(
    tmp_path: Path, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    host = host_of(tmp_path, clock, flood=[GARBAGE, 1000])
    before = lines("ext", "malformed")
    try:
        with caplog.at_level(logging.INFO, logger="promoter.plugins"):
            with pytest.raises(TemporaryError, match="not a protocol message") as failed:
                host.get_commit_statuses(repo=repo, sha=SHA)
            wait_for(lambda: host.lines.counts.get("malformed") == 1000, what="every line read")
            clock.now += 61.0
            with pytest.raises(TemporaryError):
                host.get_commit_statuses(repo=repo, sha=SHA)
            wait_for(lambda: host.lines.counts.get("malformed") == 2000, what="every line read")
    finally:
        host.close()
    assert lines("ext", "malformed") == before + 2000
    records = logged(caplog, "plugin wrote a malformed message")
    assert [r.count for r in records] == [1, 1000]  # type: ignore[attr-defined]
    shown = records[0].sample  # type: ignore[attr-defined]
    assert shown.startswith("DEBUG token=*** fetching https://***@scm.example/x yyy")
    assert len(shown) <= 123
    for secret in ("s3cr3t", "hunter2"):
        assert secret not in caplog.text and secret not in str(failed.value)


def test_a_line_over_16_mib_is_one_malformed_line_and_the_stream_reads_on(
    tmp_path: Path, repo: Repository
) -> None:
    host = host_of(tmp_path, Clock(), tooLong=17)
    try:
        with pytest.raises(TemporaryError, match="message too long"):
            host.find_open_pull_request(repo=repo, head="a", base="b")
        assert host.get_commit_statuses(repo=repo, sha=SHA) == []  # answered after it
        assert host.lines.counts == {"malformed": 1}
    finally:
        host.close()


def test_a_flood_of_invalid_events_is_counted_and_logged_once_without_payload_or_links(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    invalid = {"repository": "gitops", "after": "f" * 5000}  # no ref
    notify = [["events/refMoved", invalid]] * 300
    host = host_of(tmp_path, Clock(), name="evented", events=True, notify=notify)
    repo = Repository(name="gitops", url=str(tmp_path), scm_provider="evented")
    try:
        with caplog.at_level(logging.INFO, logger="promoter.plugins"):
            assert host.subscribe([repo], Sink())
            wait_for(lambda: host.event_results.get(("refMoved", "invalid")) == 300)
    finally:
        host.close()
    [record] = logged(caplog, "plugin event refused")
    assert record.error == "ref: Field required"  # type: ignore[attr-defined]
    assert len(record.sample) <= 123  # type: ignore[attr-defined]
    assert "pydantic" not in caplog.text and "f" * 200 not in caplog.text


def test_a_plugin_flooding_its_stderr_is_logged_within_a_bound_and_the_rest_counted(
    tmp_path: Path, repo: Repository, caplog: pytest.LogCaptureFixture
) -> None:
    host = host_of(tmp_path, Clock(), stderrFlood=3000)
    try:
        with caplog.at_level(logging.INFO, logger="promoter.plugins"):
            assert host.get_commit_statuses(repo=repo, sha=SHA) == []
            wait_for(
                lambda: host.lines.counts.get("stderr_dropped") == 3000 - BURST,
                what="every stderr line read",
            )
    finally:
        host.close()
    assert len(logged(caplog, "plugin log")) == BURST  # the clock stands still: no refill
    assert len(logged(caplog, "plugin log lines dropped: more than the promoter logs")) == 1
