"""Sharded replicas: each works on the repositories whose shard Leases it holds.

The Leases: ``settings`` (how many shards, where this replica is reached),
``assignment`` (which member each shard goes to), ``leases`` and ``lease_writer`` (the
member and shard Leases, read and written), ``coordinator`` (the loop that takes,
renews and hands over this replica's shards) and ``holdings`` (what it holds, behind a
lock), ``fence`` (no write without the shard held), ``metrics``. The work: ``placement``
(each repository's shard, each shard's weight), ``moves`` (what moved, from the loop to
the controller), ``transfer`` (taking shards over and letting go of them, through the
runtime's port), ``mode`` (``ShardedMode``). Between replicas: ``peers`` and
``peer_connections`` (keys forwarded to their owner), ``passing`` (a request passed to
its owner), ``freezes``, ``routes`` and ``views`` (the HTTP side). Its modules are
imported by name; it imports the rooms below it (``leadership``, ``runtime``,
``resources``, ``client``).
"""

__all__: list[str] = []
