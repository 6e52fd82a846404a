"""One leader: the replica holding the leader Lease does all the work.

``elector`` (leader election over a Lease, in the way of client-go, and the Lease
timings every Lease of the promoter uses), ``mode`` (``LeaderMode``, and the write
guard that refuses once the Lease is lost). Its modules are imported by name; it
imports ``runtime``, ``resources`` and ``client`` only.
"""

__all__: list[str] = []
