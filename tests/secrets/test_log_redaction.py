"""The daemon's log lines never carry a known secret, nor uvicorn's ANSI-coloured copy."""

from __future__ import annotations

import json
import logging

from promoter.redaction import remember
from tests.support_logs import daemon_logs

SECRET = "glpat-LogMeNever0123456789"


def test_a_known_secret_is_blanked_from_message_fields_and_traceback() -> None:
    remember(SECRET)
    log = logging.getLogger("promoter.test")
    with daemon_logs() as out:
        log.warning("refused by %s", f"https://x:{SECRET}@host", extra={"error": f"bad {SECRET}"})
        try:
            raise RuntimeError(f"the SCM said {SECRET}")
        except RuntimeError:
            log.exception("crashed")
    text = out.getvalue()
    assert SECRET not in text
    first, second = (json.loads(line) for line in text.splitlines())
    assert first["error"] == "bad ***"
    assert "the SCM said ***" in second["exc"]


def test_plain_logs_are_scrubbed_too() -> None:
    remember(SECRET)
    with daemon_logs(json_lines=False) as out:
        logging.getLogger("promoter.test").error("token %s", SECRET)
    assert SECRET not in out.getvalue() and "token ***" in out.getvalue()


def test_uvicorns_coloured_copy_of_a_message_is_left_out() -> None:
    with daemon_logs() as out:
        logging.getLogger("uvicorn.error").info(
            "Started server process [%d]",
            4242,
            extra={"color_message": "Started server process [\x1b[36m%d\x1b[0m]"},
        )
    (line,) = out.getvalue().splitlines()
    assert json.loads(line)["msg"] == "Started server process [4242]"
    assert "color_message" not in line and "\\u001b" not in line
