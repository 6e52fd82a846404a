"""What the daemon remembers between reconciles: the health ledger in git, and caches.

The ledger is durable (git notes); the caches of statuses, pull requests and tracked SHAs
can be lost at any time and are rebuilt by the next resync.
"""

from typing import TYPE_CHECKING, Any

from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex

if TYPE_CHECKING:
    from promoter.state.ledger import LEDGER_REF, GitLedger

__all__ = ["LEDGER_REF", "GitLedger", "PullRequestCache", "ShaIndex", "StatusCache"]


def __getattr__(name: str) -> Any:
    """The ledger loads git only when asked for: the webhook receivers use the caches alone."""
    if name in ("LEDGER_REF", "GitLedger"):
        from promoter.state import ledger

        return getattr(ledger, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
