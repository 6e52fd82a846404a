"""The daemon as a replica runs it, and the mode that says which work is the replica's.

``runtime`` (``ClusterRuntime``: reconciles reported back, keys that are not this
replica's handed to their owner), ``scm`` (``ClusterScm``: every SCM write inside the
mode's guard, CommitStatus objects in the reads), ``mode`` (the ``Mode`` protocol that
``leadership`` and ``shards`` implement, and the ``Replica`` port a mode drives the
controller through). Its modules are imported by name; it imports ``resources`` and
``client`` only.
"""

__all__: list[str] = []
