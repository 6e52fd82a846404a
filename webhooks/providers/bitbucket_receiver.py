"""What the receivers of Bitbucket Cloud and Bitbucket Data Center share: the
``X-Hub-Signature`` HMAC (``sha256=<hex>`` of the body, every configured secret tried),
the event named by ``X-Event-Key``, a delivery id from a header of each product's own
(without it, a hash of the body), and an event read for the fields its handler names."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from webhooks import payload as p
from webhooks.events import Event, Ignored
from webhooks.verify import GitHubSignature

Handlers = Mapping[str, tuple[Callable[[p.JsonObject, str], Event], type[Any]]]
"""Event key -> (the function that normalises it, the fields it is read for)."""


class BitbucketReceiver:
    """The Bitbucket side of the receiver (see webhooks.receiver.Provider), made for one
    product by its handlers, the pattern of its event keys and its delivery header."""

    name: str

    def __init__(
        self,
        secrets: Sequence[str],
        *,
        handlers: Handlers,
        event_name: re.Pattern[str],
        delivery_header: str,
    ) -> None:
        self._signature = GitHubSignature(secrets)  # the same sha256=<hex> HMAC
        self._handlers = handlers
        self._event_name = event_name
        self._delivery_header = delivery_header

    def __bool__(self) -> bool:
        return bool(self._signature)

    @staticmethod
    def sign(secret: str, body: bytes) -> str:
        """The ``X-Hub-Signature`` Bitbucket would send (for tests)."""
        return GitHubSignature.sign(secret, body)

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> bool:
        return self._signature.verify(headers.get("x-hub-signature"), body)

    def event_name(self, headers: Mapping[str, str]) -> str:
        return headers.get("x-event-key", "").strip()

    def event_label(self, event: str, *, trusted: bool) -> str:
        if event in self._handlers or (trusted and self._event_name.match(event)):
            return event
        return "other"

    def delivery_id(self, headers: Mapping[str, str], body: bytes | None) -> str | None:
        value = headers.get(self._delivery_header, "").strip()[:128]
        if value or body is None:
            return value or None
        return "body-sha256:" + hashlib.sha256(body).hexdigest()

    def parse(self, event: str, headers: Mapping[str, str], body: bytes) -> Event:
        handler = self._handlers.get(event)
        if handler is None:
            return Ignored("event not handled")
        normalise, shape = handler
        return normalise(p.decode_fields(body, shape), event)
