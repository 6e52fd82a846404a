"""The daemon as a replica runs it.

``runtime`` (``ClusterRuntime``: reconciles reported back, keys that are not this
replica's handed to their owner), ``scm`` (``ClusterScm``: every SCM write inside the
replica's write guard, CommitStatus objects in the reads). Its modules are imported by
name; it imports ``resources`` and ``client`` only.
"""

__all__: list[str] = []
