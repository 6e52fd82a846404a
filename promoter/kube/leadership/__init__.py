"""One leader: the replica holding the leader Lease does all the work.

``elector`` (leader election over a Lease, in the way of client-go, and the Lease
timings every Lease of the promoter uses). Its modules are imported by name.
"""

__all__: list[str] = []
