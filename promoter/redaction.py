"""Every secret the process knows, and the one function that blanks them out of any text.

A secret becomes known when the configuration resolves it (``SecretRef.resolve``) or
when a plugin obtains one at run time (a GitHub App's installation token). Error texts
are scrubbed where they leave an SCM call (``scm_plugins.calls``), and every log record
is scrubbed by ``RedactingFilter`` (installed by ``promoter.logs.setup``), so one
plugin's forgetfulness cannot leak a token into the API, ``/readyz`` or the logs.

The set is process-wide on purpose, like the log handlers that must honour it: a
secret read anywhere in the process must be hidden everywhere in it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable

MASK = "***"
MIN_LENGTH = 6
"""Shorter values are not scrubbed: they would garble every message (loading refuses
empty secrets; short ones are weak anyway)."""


class SecretSet:
    """A thread-safe set of secret values; ``scrub`` replaces each in a text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fixed: set[str] = set()
        self._named: dict[str, frozenset[str]] = {}
        self._ordered: tuple[str, ...] = ()

    def add(self, *values: str, slot: str | None = None) -> None:
        """Know these secrets (and each of their lines, for multi-line keys) from now on.

        With ``slot``, the values replace the slot's previous ones: a token renewed every
        hour (a GitHub App's) takes its predecessor's place instead of piling up.
        """
        found = set()
        for value in values:
            for part in (value, *value.splitlines()):
                part = part.strip()
                if len(part) >= MIN_LENGTH:
                    found.add(part)
        with self._lock:
            if slot is not None:
                self._named[slot] = frozenset(found)
            elif found <= self._fixed:
                return
            else:
                self._fixed = self._fixed | found
            every = self._fixed.union(*self._named.values())
            self._ordered = tuple(sorted(every, key=len, reverse=True))

    def clear(self) -> None:
        with self._lock:
            self._fixed.clear()
            self._named.clear()
            self._ordered = ()

    def __contains__(self, value: object) -> bool:
        return value in self._ordered

    def scrub(self, text: str, extra: Iterable[str] = ()) -> str:
        """``text`` with every known secret (and every one of ``extra``) replaced by ``***``."""
        ordered = self._ordered
        more = [e for e in extra if len(e) >= MIN_LENGTH]
        if more:
            ordered = tuple(sorted({*ordered, *more}, key=len, reverse=True))
        for secret in ordered:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def scrub_exception(self, exc: BaseException | None) -> None:
        """Scrub ``exc`` and its causes in place: their arguments and message attributes."""
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            exc.args = tuple(self.scrub(a) if isinstance(a, str) else a for a in exc.args)
            for name in ("message", "error_message", "msg", "strerror"):
                value = getattr(exc, name, None)
                if isinstance(value, str):
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(exc, name, self.scrub(value))
            exc = exc.__cause__ or exc.__context__


KNOWN = SecretSet()
"""The process's secrets."""


def remember(*values: str, slot: str | None = None) -> None:
    """Add secrets to the process's set (in ``slot``, replacing its previous ones)."""
    KNOWN.add(*values, slot=slot)


def scrub(text: str) -> str:
    """``text`` without any secret the process knows."""
    return KNOWN.scrub(text)


class RedactingFilter(logging.Filter):
    """Scrubs a record's message, its string fields and its traceback before formatting."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        record.msg, record.args = KNOWN.scrub(message), None
        for key, value in list(vars(record).items()):
            if key not in _PLAIN and isinstance(value, str):
                setattr(record, key, KNOWN.scrub(value))
        if record.exc_info and record.exc_info[1] is not None:
            KNOWN.scrub_exception(record.exc_info[1])
        if record.exc_text:
            record.exc_text = KNOWN.scrub(record.exc_text)
        return True


_PLAIN = frozenset(
    {"name", "levelname", "pathname", "filename", "module", "funcName", "threadName", "msg"}
)
