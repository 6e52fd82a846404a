"""How a replica's repositories are sharded, and where the other replicas reach it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ShardSettings:
    """How repositories are sharded, and where this replica is reached."""

    count: int = 64
    group: str = "promoter"
    address: str = ""
    """``http://host:port`` other replicas forward webhooks and API writes to."""
    peer_token: str | None = field(default=None, repr=False)
    """The secret replicas sign forwarded work with (``promoter.kube.shards.forwarding.peers``)."""
    owner: dict[str, Any] | None = None
    """The Pod that owns the member Lease, as an ownerReference (Kubernetes deletes the
    Lease with the Pod)."""

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 4096:
            raise ValueError("the shard count must be between 1 and 4096")
