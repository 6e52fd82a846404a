"""Azure DevOps' throttling as the fake plays it: TSTUs spent per sliding window.

Azure counts each caller's consumption in TSTUs over a sliding five minutes and, past its
limit, delays and then blocks (429, ``TF400733``). The fake spends one TSTU per call: each
answer carries ``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and ``X-RateLimit-Reset``,
and a call past the limit is blocked with ``Retry-After`` and ``X-RateLimit-Resource``.
"""

from __future__ import annotations

import math

from tests.scm_azure.fake_state import Answer, AzureError

BLOCKED = (
    "TF400733: The request has been canceled: Request was blocked due to exceeding usage of "
    "resource 'ATCPU' in namespace 'User'."
)


class Tstu:
    """``limit`` calls per sliding ``window`` seconds; no limit when ``limit`` is None."""

    def __init__(self, limit: int | None, window: float = 300.0) -> None:
        self.limit, self.window = limit, window
        self._spent: list[float] = []

    def take(self, now: float) -> Answer:
        """200 with the rate-limit headers when the call may go on, else the 429."""
        if self.limit is None:
            return Answer(200)
        limit, window = self.limit, self.window
        self._spent = [t for t in self._spent if t > now - window]
        reset = (self._spent[0] + window) if self._spent else now
        if len(self._spent) >= limit:
            body = AzureError(429, BLOCKED, "RequestBlockedException").answer().body
            return Answer(
                429,
                body,
                {
                    "Retry-After": str(max(1, math.ceil(reset - now))),
                    "X-RateLimit-Resource": "Core:ATCPU",
                    "X-RateLimit-Delay": "0.000",
                    "X-RateLimit-Limit": str(limit),
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": str(int(reset)),
                },
            )
        self._spent.append(now)
        return Answer(
            200,
            headers={
                "X-RateLimit-Limit": str(limit),
                "X-RateLimit-Remaining": str(limit - len(self._spent)),
                "X-RateLimit-Reset": str(int(self._spent[0] + window)),
            },
        )
