"""One write someone asks the API for, from the first check to the audit entry.

Who first, then what. ``Attempts.begin`` names the caller, then refuses a cross-site
request (403, naming whoever the request proved to be), a caller whose credentials are
not accepted (401), one without the write's role anywhere in its strategy (401 without
credentials, 403 with) and a body that is not declared JSON (415): no body is read for
any of them. The handler then reads the body and calls ``Attempt.authorize`` with the
role and scope the write needs on what the body names. ``Attempt.finish`` records how it
ended in the audit: ``allowed`` (done), ``refused`` (401, 403, 415, 429) or ``failed``
(anything else: a malformed body, a conflict, an SCM error). The audit keeps a bounded
number of entries a client and day (``promoter.state.audit_quota``): a write past it is
refused (429) before it runs, so every write done is audited.
"""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from promoter.config import ROLES, Role
from promoter.errors import AmbiguousName
from promoter.http.access import (
    AccessControl,
    Forbidden,
    Identity,
    Scope,
    Unauthenticated,
    cross_site,
    json_only,
    peer,
)
from promoter.http.api.problems import ambiguous, problem
from promoter.http.ports import Audit
from promoter.state.audit_entry import AuditEntry, Outcome

REFUSED = (401, 403, 415, 429)
MAX_DETAIL = 1024
WRITE_ROLES: tuple[Role, ...] = ("operator", "approver", "admin")
"""What an unknown operation needs before it is answered 404: some role that writes."""


class Attempt:
    """A write in progress: who asks, for what, where; ``finish`` audits it."""

    def __init__(
        self,
        request: Request,
        audit: Audit,
        access: AccessControl,
        *,
        action: str,
        strategy: str | None,
        repository: str | None,
    ) -> None:
        self.request = request
        self.audit = audit
        self.access = access
        self.action = action
        self.strategy = strategy
        self.repository = repository
        self.environment: str | None = None
        self.detail: dict[str, str] = {}
        self.identity: Identity | None = None
        self.answer: Response | None = None
        """Set when the attempt was refused before its body was read."""
        self._started: AuditEntry | None = None

    def authorize(self, role: Role, scope: Scope) -> Response | None:
        """None when the caller has ``role`` on ``scope``; else the refusal, audited."""
        assert self.identity is not None
        try:
            self.access.policy.require(self.identity, role, scope)
        except Forbidden as exc:
            if not self.identity.credentialed:
                return self.finish(problem(401, f"{self.action} needs credentials: {_HINT}"))
            return self.finish(problem(403, str(exc)))
        return None

    def may_ask(self) -> Response | None:
        """None when the caller has the write's role somewhere in its strategy (anywhere,
        for a write that names none before its body is read); else the refusal, audited."""
        assert self.identity is not None
        known = ROLES.get(self.action)
        roles = (known,) if known is not None else WRITE_ROLES
        scope = Scope(self.strategy) if self.strategy is not None else None
        if any(self.access.policy.allows(self.identity, role, scope) for role in roles):
            return None
        if not self.identity.credentialed:
            return self.finish(problem(401, f"{self.action} needs credentials: {_HINT}"))
        where = f" on {self.strategy}" if self.strategy is not None else ""
        return self.finish(
            problem(403, f"{self.identity.name} needs the {' or '.join(roles)} role{where}")
        )

    def ambiguous(self, role: Role, strategy: str, exc: AmbiguousName) -> Response:
        """409 naming the branches an ambiguous environment name could mean, audited; to a
        caller with ``role`` somewhere in ``strategy`` (any other is refused as without)."""
        denied = self.authorize(role, Scope(strategy))
        return denied if denied is not None else self.finish(ambiguous(exc))

    def allows(self, role: Role, scope: Scope) -> bool:
        assert self.identity is not None
        return self.access.policy.allows(self.identity, role, scope)

    def start(self) -> Response | None:
        """Journal the write before it runs (a crash leaves it ``interrupted``); the
        refusal (429, audited as far as the audit keeps it) when the audit keeps no more
        of this client's writes today: a write is never done unaudited."""
        started = self._entry("started", None, "")
        if not self.audit.record(started):
            return self.finish(
                problem(429, "the audit keeps no more of this caller's writes today")
            )
        self._started = started
        return None

    def finish(self, response: Response) -> Response:
        """Record how the write ended (from its answer's status) and return the answer."""
        status = response.status_code
        outcome: Outcome = (
            "allowed" if status < 400 else "refused" if status in REFUSED else "failed"
        )
        message = ""
        if status >= 400:
            try:
                message = str(json.loads(bytes(response.body)).get("error", ""))
            except (ValueError, AttributeError):
                message = ""
        self.audit.record(self._entry(outcome, status, message))
        return response

    def _entry(self, outcome: Outcome, status: int | None, message: str) -> AuditEntry:
        who = self.identity
        fields = {
            "who": who.name if who else "unknown",
            "via": who.via if who else "unknown",
            "action": self.action,
            "strategy": self.strategy,
            "environment": self.environment,
            "repository": self.repository,
            "detail": {k: v[:MAX_DETAIL] for k, v in self.detail.items() if v},
            "address": peer(self.request),
            "forwarded": self.access.forwarded_client(self.request),
            "origin": (self.request.headers.get("origin") or None),
            "outcome": outcome,
            "status": status,
            "message": message[:MAX_DETAIL],
        }
        if self._started is not None:  # the same entry, now with its outcome
            return self._started.model_copy(update=fields)
        return AuditEntry.model_validate(fields)


_HINT = "send Authorization: Bearer TOKEN (a token of access.tokens)"


class Attempts:
    """Where every write of the API begins."""

    def __init__(self, audit: Audit, access: AccessControl) -> None:
        self.audit = audit
        self.access = access

    async def begin(
        self,
        request: Request,
        action: str,
        *,
        strategy: str | None = None,
        repository: str | None = None,
    ) -> Attempt:
        """The attempt, with ``answer`` set (and audited) when it is refused already."""
        attempt = Attempt(
            request,
            self.audit,
            self.access,
            action=action,
            strategy=strategy,
            repository=repository,
        )
        who = await self.access.identify(request)
        if isinstance(who, Identity):
            attempt.identity = who
        why = cross_site(request, public_origin=self.access.public_origin)
        if why is not None:
            attempt.answer = attempt.finish(problem(403, why))
            return attempt
        if isinstance(who, Unauthenticated):
            attempt.answer = attempt.finish(problem(401, f"{who.reason}; {_HINT}"))
            return attempt
        attempt.answer = attempt.may_ask()
        if attempt.answer is None and not json_only(request):
            attempt.answer = attempt.finish(
                problem(415, "a write takes a JSON body: send Content-Type: application/json")
            )
        return attempt
