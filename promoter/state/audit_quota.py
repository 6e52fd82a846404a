"""How many audit entries each client may leave a day, so that a flood of requests cannot
grow the audit (the journal, the repositories' notes) without bound.

A client is the name a credential proved (a token's, a proxy's user, a Kubernetes user),
else where the request came from: the client a trusted proxy forwarded it for, or the
peer; an IPv6 address by its /64, which one host commonly holds whole. Each UTC day a
client leaves at most ``MAX_WRITES`` writes that ran (an entry journaled ``started``;
its outcome, whatever it is, follows it) and ``MAX_OTHERS`` other entries (refused, or
failed before running: a malformed body, an unknown strategy). Past them nothing more of
that client is kept that day: each entry not kept is counted
(``promoter_audit_entries_dropped_total{bound="client"}``), and the first of a client, kind
and day is logged. The API refuses a write past ``MAX_WRITES`` before it runs (429), so
no write is done unaudited. The counts are kept in memory: a restart starts them afresh.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime

from promoter.metrics import AUDIT_DROPPED_TOTAL
from promoter.models import utcnow
from promoter.state.audit_entry import AuditEntry

log = logging.getLogger("promoter.audit")

MAX_WRITES = 10_000
"""Writes that ran, a client and day (a CI job posting a status on each commit of many
repositories stays well below)."""
MAX_OTHERS = 1_000
"""Refused or failed-before-running requests, a client and day."""
MAX_CLIENTS = 10_000
"""Clients counted apart a day; the ones past them share one count (``others``)."""
CREDENTIALED = ("token", "proxy", "kubernetes")
OTHERS = "others"


def client_of(entry: AuditEntry) -> str:
    """Who an entry is counted for: ``token:ci``, ``proxy:ada``, ``203.0.113.9``,
    ``2001:db8:1:2::/64``."""
    if entry.via in CREDENTIALED:
        return f"{entry.via}:{entry.who}"
    where = entry.forwarded or entry.address
    try:
        address = ipaddress.ip_address(where)
    except ValueError:
        return where
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class AuditQuota:
    """The day's counts; ``admit`` an entry the audit has not seen yet (by id)."""

    def __init__(
        self,
        *,
        writes: int | None = None,
        others: int | None = None,
        clients: int | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """The bounds default to ``MAX_WRITES``, ``MAX_OTHERS`` and ``MAX_CLIENTS``."""
        self.limits = {
            "writes": MAX_WRITES if writes is None else writes,
            "others": MAX_OTHERS if others is None else others,
        }
        self.clients = MAX_CLIENTS if clients is None else clients
        self.clock = clock
        self._day: date | None = None
        self._counts: dict[tuple[str, str], int] = {}
        self._told: set[tuple[str, str]] = set()
        self._clients: set[str] = set()

    def admit(self, entry: AuditEntry) -> bool:
        """Whether ``entry``, the first of its id, is kept (counted when it is)."""
        today = self.clock().astimezone(UTC).date()
        if today != self._day:
            self._day, self._counts, self._told, self._clients = today, {}, set(), set()
        kind = "writes" if entry.outcome == "started" else "others"
        client = client_of(entry)
        if client not in self._clients:
            if len(self._clients) >= self.clients:
                client = OTHERS
            else:
                self._clients.add(client)
        key = (client, kind)
        count = self._counts.get(key, 0)
        if count < self.limits[kind]:
            self._counts[key] = count + 1
            return True
        AUDIT_DROPPED_TOTAL.labels(entry.outcome, "client").inc()
        if key not in self._told:
            self._told.add(key)
            log.warning(
                "audit entries dropped",
                extra={"client": client, "kind": kind, "limit": self.limits[kind]},
            )
        return False
