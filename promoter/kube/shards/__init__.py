"""Sharded replicas: each works on the repositories whose shard Leases it holds.

The Leases: ``assignment`` (which member each shard goes to), ``leases`` and
``lease_writer`` (the member and shard Leases, read and written), ``coordinator`` (the
loop that takes, renews and hands over this replica's shards), ``fence`` (no write
without the shard held), ``metrics``. The work: ``sharding`` (one replica's part, as
the controller uses it). Between replicas: ``peers`` and ``peer_connections`` (keys
forwarded to their owner), ``passing`` (a request passed to its owner), ``freezes``.
Its modules are imported by name.
"""

__all__: list[str] = []
