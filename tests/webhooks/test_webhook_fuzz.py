"""Genuine payloads, mutated (fields removed, types changed, bodies cut, huge strings), signed:
never a 5xx, never an exception in the log."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event as note
from hypothesis import given
from hypothesis import strategies as st

from tests.webhooks.helpers import (
    GITHUB_FIXTURES,
    GITLAB_EVENT_OF_KIND,
    GITLAB_FIXTURES,
    HELLO_SHA,
    SECRET_ENV,
    Hooks,
    running_hooks,
)

GITHUB_CASES = sorted((p.parent.name, p) for p in GITHUB_FIXTURES.rglob("*.json"))
GITLAB_CASES = sorted(
    (GITLAB_EVENT_OF_KIND[json.loads(p.read_bytes())["object_kind"]], p)
    for p in GITLAB_FIXTURES.rglob("*.json")
)
ALLOWED = {200, 202, 400, 413}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hooks, _Records]]:
    saved = {k: os.environ.get(k) for k in SECRET_ENV}
    os.environ.update(SECRET_ENV)
    records = _Records()
    logger = logging.getLogger("promoter.webhooks")
    logger.addHandler(records)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with running_hooks(tmp_path_factory.mktemp("fuzz")) as hooks:
            hooks.shas.track("hello-app", [HELLO_SHA])
            yield hooks, records
    finally:
        logger.removeHandler(records)
        logger.setLevel(old_level)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    if depth > 6:
        return
    items: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))[:3]
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key), depth + 1)


def _replace(value: Any, path: tuple[Any, ...], new: Any, *, delete: bool = False) -> None:
    for key in path[:-1]:
        value = value[key]
    if delete:
        del value[path[-1]]
    else:
        value[path[-1]] = new


REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["x" * 300_000, "0" * 40, "refs/heads/master", "refs/notes/x", "completed"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@st.composite
def mutated(draw: st.DrawFn, source: Path) -> bytes:
    raw = source.read_bytes()
    how = draw(st.sampled_from(["remove", "retype", "truncate", "garbage", "retype-many"]))
    if how == "truncate":
        return raw[: draw(st.integers(min_value=0, max_value=len(raw) - 1))]
    if how == "garbage":
        return draw(st.binary(max_size=200))
    data = json.loads(raw)
    paths = list(_paths(data))
    for _ in range(1 if how != "retype-many" else draw(st.integers(2, 6))):
        path = draw(st.sampled_from(paths))
        # an earlier mutation may have removed or replaced a parent of this path
        with contextlib.suppress(KeyError, IndexError, TypeError):
            _replace(data, path, draw(REPLACEMENTS), delete=how == "remove")
    return json.dumps(data, allow_nan=True).encode()


def _check(answer: Any, records: _Records) -> None:
    note(f"status {answer.status_code}")
    assert answer.status_code in ALLOWED, answer.text
    _no_exception_logged(records)


def _no_exception_logged(records: _Records) -> None:
    bad = [r for r in records.records if r.exc_info or r.levelno >= logging.ERROR]
    records.records.clear()
    assert bad == []


@given(data=st.data(), case=st.sampled_from(GITHUB_CASES))
def test_mutated_github_payloads_never_cause_a_5xx_or_a_logged_exception(
    fuzz: tuple[Hooks, _Records], data: st.DataObject, case: tuple[str, Path]
) -> None:
    hooks, records = fuzz
    event, source = case
    body = data.draw(mutated(source))
    _check(hooks.github(event, body), records)


@given(data=st.data(), case=st.sampled_from(GITLAB_CASES))
def test_mutated_gitlab_payloads_never_cause_a_5xx_or_a_logged_exception(
    fuzz: tuple[Hooks, _Records], data: st.DataObject, case: tuple[str, Path]
) -> None:
    hooks, records = fuzz
    event, source = case
    body = data.draw(mutated(source))
    _check(hooks.gitlab(event, body, sign=data.draw(st.booleans())), records)


@given(
    event=st.text(max_size=30),
    headers=st.dictionaries(
        st.sampled_from(
            [
                "X-Hub-Signature-256",
                "X-GitHub-Delivery",
                "Content-Type",
                "Content-Length",
                "X-Gitlab-Token",
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "X-Gitlab-Event-UUID",
                "Idempotency-Key",
            ]
        ),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=80),
        max_size=4,
    ),
    body=st.binary(max_size=300),
)
def test_arbitrary_headers_and_bodies_never_cause_a_5xx(
    fuzz: tuple[Hooks, _Records], event: str, headers: dict[str, str], body: bytes
) -> None:
    hooks, records = fuzz
    raw_headers = {k.encode(): v.encode("latin-1") for k, v in headers.items()}
    if b"Content-Length" in raw_headers:
        raw_headers[b"Content-Length"] = str(len(body)).encode()
    safe_event = event.encode("latin-1", "replace").strip(b" \t") or b"push"
    for path in ("/webhooks/github", "/webhooks/gitlab"):
        answer = hooks.client.post(
            path,
            content=body,
            headers={**raw_headers, b"X-GitHub-Event": safe_event, b"X-Gitlab-Event": safe_event},
        )
        note(f"{path} {answer.status_code}")
        assert answer.status_code in ALLOWED | {401}
    _no_exception_logged(records)
