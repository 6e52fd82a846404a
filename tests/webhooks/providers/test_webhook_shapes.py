"""Decoding only the fields a normaliser reads means the same as decoding the whole payload:
for every genuine payload and for mutated ones (fields removed, retyped, bodies cut)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fixture_paths import FIXTURES
from tests.webhooks.helpers import GITHUB_FIXTURES, GITLAB_EVENT_OF_KIND, GITLAB_FIXTURES
from tests.webhooks.test_webhook_fuzz import mutated
from webhooks import (
    AzureDevOps,
    BitbucketCloud,
    BitbucketDataCenter,
    Forgejo,
    GitHub,
    GitLab,
    ServiceHookAuth,
    payload,
)
from webhooks.events import Event

FORGEJO_FIXTURES = FIXTURES / "forgejo" / "webhooks"
AZURE_FIXTURES = FIXTURES / "azure-devops" / "webhooks"
BITBUCKET_EVENTS = {
    "bitbucket-cloud": {
        "push": "repo:push",
        "pr_created": "pullrequest:created",
        "pr_updated": "pullrequest:updated",
        "pr_fulfilled": "pullrequest:fulfilled",
        "pr_declined": "pullrequest:rejected",
        "pr_comment": "pullrequest:comment_created",
        "pipeline_hook_created": "repo:commit_status_created",
        "pipeline_hook_update": "repo:commit_status_updated",
    },
    "bitbucket-datacenter": {
        "push": "repo:refs_changed",
        "pr_open": "pr:opened",
        "pr_from_ref_updated": "pr:from_ref_updated",
        "pr_modified": "pr:modified",
        "pr_merged": "pr:merged",
        "pr_declined": "pr:declined",
        "pr_deleted": "pr:deleted",
    },
}
"""Each genuine Bitbucket delivery's event, by the start of its file's name."""
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class _FixedNow(datetime):
    """``datetime`` whose ``now`` is fixed: a payload without a time is stamped the same twice."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return NOW


@pytest.fixture(autouse=True)
def _fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payload, "datetime", _FixedNow)


def _outcome(parse: Callable[[], Event]) -> object:
    try:
        return parse()
    except payload.PayloadError as exc:
        return ("PayloadError", str(exc))


def _github_cases() -> list[tuple[str, Path]]:
    return sorted((p.parent.name, p) for p in GITHUB_FIXTURES.rglob("*.json"))


def _gitlab_cases() -> list[tuple[str, Path]]:
    cases = []
    for path in sorted(GITLAB_FIXTURES.rglob("*.json")):
        kind = json.loads(path.read_bytes())["object_kind"]
        cases += [(GITLAB_EVENT_OF_KIND[kind], path), ("System Hook", path)]
    return cases


def _forgejo_cases() -> list[tuple[str, Path]]:
    return [(p.stem.split("-")[1], p) for p in sorted(FORGEJO_FIXTURES.glob("*.json"))]


def _bitbucket_cases() -> list[tuple[str, str, Path]]:
    cases = []
    for product, events in BITBUCKET_EVENTS.items():
        for path in sorted((FIXTURES / product / "webhooks").glob("*.json")):
            prefix = max((k for k in events if path.stem.startswith(k)), key=len)
            cases.append((product, events[prefix], path))
    return cases


def _azure_cases() -> list[tuple[str, Path]]:
    return [("", p) for p in sorted(AZURE_FIXTURES.glob("*.json"))]  # the event is in the body


PROVIDERS: dict[str, Any] = {
    "github": GitHub(["s"]),
    "gitlab": GitLab(["t"]),
    "forgejo": Forgejo(["s"]),
    "bitbucket-cloud": BitbucketCloud(["s"]),
    "bitbucket-datacenter": BitbucketDataCenter(["s"]),
    "azure-devops": AzureDevOps(
        ServiceHookAuth(username=None, passwords=["p"], header=None, tokens=[])
    ),
}
CASES = [
    *(("github", e, p) for e, p in _github_cases()),
    *(("gitlab", e, p) for e, p in _gitlab_cases()),
    *(("forgejo", e, p) for e, p in _forgejo_cases()),
    *_bitbucket_cases(),
    *(("azure-devops", e, p) for e, p in _azure_cases()),
]
HEADERS = {"content-type": "application/json"}


def _both(provider: str, event: str, body: bytes) -> tuple[object, object]:
    """What the receiver makes of a body, and what it makes of it decoded whole."""
    fast = _outcome(lambda: PROVIDERS[provider].parse(event, HEADERS, body))
    return fast, _outcome(lambda: _parse_whole(provider, event, body))


@pytest.mark.parametrize(("provider", "event", "path"), CASES, ids=lambda v: str(v)[-40:])
def test_a_genuine_payload_means_the_same_decoded_by_its_fields_or_whole(
    provider: str, event: str, path: Path
) -> None:
    fast, full = _both(provider, event, path.read_bytes())
    assert fast == full


@given(data=st.data(), case=st.sampled_from(CASES))
def test_a_mutated_payload_means_the_same_decoded_by_its_fields_or_whole(
    data: st.DataObject, case: tuple[str, str, Path]
) -> None:
    provider, event, path = case
    fast, full = _both(provider, event, data.draw(mutated(path)))
    assert fast == full


def _parse_whole(provider: str, event: str, body: bytes) -> Event:
    fast = payload.decode_fields
    payload.decode_fields = lambda raw, shape: payload.decode_json(raw)  # type: ignore[assignment]
    try:
        return PROVIDERS[provider].parse(event, HEADERS, body)  # type: ignore[no-any-return]
    finally:
        payload.decode_fields = fast  # type: ignore[assignment]


@pytest.mark.parametrize(
    "body",
    [
        b'{"ref": "refs/heads/main", "x": "\xff"}',  # not UTF-8 where nothing is read
        b'{"ref": "refs/heads/main", "x": NaN}',  # not JSON
        b'\xef\xbb\xbf{"ref": "refs/heads/main"}',  # a byte-order mark
        b'{"ref": "refs/heads/main", "repository": "not an object"}',
        b'{"ref": "refs/heads/main", "x": "\\ud800"}',  # a lone surrogate
    ],
)
def test_what_the_field_decoder_refuses_is_answered_as_the_whole_decoder_answers(
    body: bytes,
) -> None:
    fast, full = _both("github", "push", body)
    assert fast == full
