"""Acting: the engine's actions carried out, and what was done told.

``executor`` carries out a decision's actions: pull requests through ``pull_requests``,
merges through ``merges`` (through the SCM's queue: ``queues``), the "ours" merge that
keeps a promotion mergeable (``mergeable``), revert commits (``revert_writer``), SCM
deployments (``deployments``). What a run did is its ``outcome``; what it did is told to
the observers as ``events``, the DORA counters among them (``dora_counters``). Above
reading; below the loop. Its modules are imported by their own paths inside the daemon,
and from outside through ``promoter.daemon``.
"""

__all__: list[str] = []
