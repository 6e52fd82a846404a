"""Every line of a plugin accounted for: what the promoter cannot use is counted and logged
at most once a minute per kind, with a short sample and never a whole payload.

A plugin that writes garbage, answers ids nobody asked for, sends events that do not
validate or floods its stderr must not flood the promoter's log in turn. ``LineAccount``
counts each such line in ``promoter_plugin_lines_total{provider,kind}`` (invalid events
are counted in ``promoter_plugin_events_total`` instead) and logs the first of a kind,
then at most one line a minute saying how many came since, with a sample of the last
one: its first ``SAMPLE`` characters, with what looks like a credential blanked and
every secret the process knows scrubbed (``promoter.redaction``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

from promoter.metrics import PLUGIN_LINES_TOTAL
from promoter.redaction import KNOWN

log = logging.getLogger("promoter.plugins")

LOG_EVERY = 60.0
"""Seconds between two log lines of one kind of unusable line, per provider."""
SAMPLE = 120
"""Characters of an unusable line (or of an error about it) quoted in a log line."""

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_SECRET_FIELD = re.compile(
    r"(?i)(\b(?:token|password|passwd|secret|authorization|api[_-]?key|private[_-]?key)"
    r"[\"']?\s*[:=]\s*)(\"[^\"]*\"?|'[^']*'?|[^\s,;}&]+)"
)


def sample(text: str, limit: int = SAMPLE) -> str:
    """``text`` cut to ``limit`` characters, with a URL's user and password, the value of
    a token, password, secret, key or authorization field, and every known secret blanked."""
    head = text[: limit * 4]
    head = _USERINFO.sub(r"\1***@", head)
    head = _SECRET_FIELD.sub(r"\1***", head)
    head = KNOWN.scrub(head)
    return head[:limit] + ("..." if len(text) > limit else "")


class LineAccount:
    """One provider's unusable lines: counted, and logged at most once per ``every`` seconds
    per kind. Thread-safe (the plugin's stdout and stderr readers both use it)."""

    def __init__(
        self,
        provider: str,
        plugin: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        every: float = LOG_EVERY,
    ) -> None:
        self.provider = provider
        self.plugin = plugin
        """The plugin's name, for the log lines (it may be learnt only from its handshake)."""
        self.clock = clock
        self._every = every
        self._lock = threading.Lock()
        self._logged_at: dict[str, float] = {}
        self._since: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        """Lines of each kind since this account was made (the metric counts them too)."""

    def note(
        self,
        kind: str,
        message: str,
        *,
        text: str | Callable[[], str] = "",
        level: int = logging.WARNING,
        metric: bool = True,
        **fields: object,
    ) -> None:
        """One unusable line of ``kind``; ``text`` is what to quote of it (sampled here; a
        function is called only when the line is logged: a flood is not serialised)."""
        if metric:
            PLUGIN_LINES_TOTAL.labels(self.provider, kind).inc()
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self._since[kind] = self._since.get(kind, 0) + 1
            now = self.clock()
            last = self._logged_at.get(kind)
            if last is not None and now - last < self._every:
                return
            self._logged_at[kind] = now
            count = self._since.pop(kind)
        extra: dict[str, object] = {
            "provider": self.provider,
            "plugin": self.plugin,
            "kind": kind,
            "count": count,
            **fields,
        }
        quoted = text() if callable(text) else text
        if quoted:
            extra["sample"] = sample(quoted)
        log.log(level, message, extra=extra)
