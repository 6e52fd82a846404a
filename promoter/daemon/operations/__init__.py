"""Operations: what a person asks of an environment (revert, hold, release, promote, ...).

``manual`` runs each one under the strategy's lock, through the reconciler's reading and
the executor, and answers one of the typed results of ``results``. Above the loop, whose
reconciler it drives; below the runtime. Its modules are imported by their own paths
inside the daemon, and from outside through ``promoter.daemon``.
"""

__all__: list[str] = []
