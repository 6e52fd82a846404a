"""The log context: the fields of the work in hand on every line, in JSON and plain logs."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from promoter.logs import current_context, log_context, reconcile_context
from promoter.redaction import remember
from tests.support_logs import daemon_logs

log = logging.getLogger("promoter.test")


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_line_logged_in_a_context_carries_its_fields_in_json_and_in_plain_logs() -> None:
    with daemon_logs() as out, log_context(strategy="guestbook", reconcile_id="r-1"):
        log.info("pull request opened", extra={"pr": 7})
    (line,) = lines(out.getvalue())
    assert (line["strategy"], line["reconcile_id"], line["pr"]) == ("guestbook", "r-1", 7)

    with daemon_logs(json_lines=False) as out, log_context(strategy="guestbook"):
        log.info("pull request opened", extra={"pr": 7})
    assert out.getvalue().strip() == "info    pull request opened strategy=guestbook pr=7"


def test_a_nested_context_adds_fields_and_leaving_it_restores_the_outer_one() -> None:
    with daemon_logs() as out:
        with log_context(strategy="guestbook", environment="environment/dev"):
            with log_context(environment="environment/prod", manual_operation="hold"):
                log.info("inner")
            log.info("outer")
        log.info("outside")
    inner, outer, outside = lines(out.getvalue())
    assert (inner["strategy"], inner["environment"], inner["manual_operation"]) == (
        "guestbook",
        "environment/prod",
        "hold",
    )
    assert outer["environment"] == "environment/dev" and "manual_operation" not in outer
    assert "strategy" not in outside and "environment" not in outside


def test_a_field_given_in_extra_wins_over_the_context() -> None:
    with daemon_logs() as out, log_context(strategy="guestbook", environment="environment/dev"):
        log.warning("revert opened", extra={"environment": "environment/prod"})
    (line,) = lines(out.getvalue())
    assert (line["strategy"], line["environment"]) == ("guestbook", "environment/prod")


def test_a_none_value_leaves_the_field_out() -> None:
    with daemon_logs() as out, log_context(delivery_id=None, strategy="guestbook"):
        log.info("webhook accepted")
    (line,) = lines(out.getvalue())
    assert "delivery_id" not in line and line["strategy"] == "guestbook"


def test_an_exception_leaving_the_block_restores_the_outer_context() -> None:
    with (
        pytest.raises(RuntimeError),
        log_context(strategy="broken"),
        log_context(environment="environment/dev"),
    ):
        raise RuntimeError("the SCM went away")
    assert current_context() == {}


def test_a_context_stays_in_its_thread() -> None:
    seen: list[dict[str, Any]] = []
    with log_context(strategy="guestbook"):
        other = threading.Thread(target=lambda: seen.append(dict(current_context())))
        other.start()
        other.join()
    assert seen == [{}]


def test_a_known_secret_in_a_context_value_is_blanked() -> None:
    secret = "ghp_ContextNeverLeaks0123"
    remember(secret)
    with daemon_logs() as out, log_context(delivery_id=f"id-{secret}"):
        log.info("webhook accepted")
    assert secret not in out.getvalue()
    assert lines(out.getvalue())[0]["delivery_id"] == "id-***"


def test_each_reconcile_gets_a_fresh_id_and_a_nested_one_of_the_same_strategy_joins_it() -> None:
    with reconcile_context("guestbook"):
        first = current_context()["reconcile_id"]
        with reconcile_context("guestbook"):
            assert current_context()["reconcile_id"] == first
        with reconcile_context("other"):
            assert current_context()["reconcile_id"] != first
    with reconcile_context("guestbook"):
        assert current_context()["reconcile_id"] != first
    assert current_context() == {}
