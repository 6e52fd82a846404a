"""Memory: what the daemon keeps between reconciles, and how small it keeps it.

``settled`` keeps what each strategy's last reconcile read and which of it is settled
(the resync leaves a quiet strategy alone); ``kept`` is what a strategy's view keeps of
its last reconcile (a summary, not the snapshot's models); ``trim`` gives freed memory back to the
system once the daemon rests after work (through ``promoter.tuning``, where the process's
settings are made). At the bottom, beside the checks: it imports no other room.
Its modules are imported by their own paths inside the daemon, and from outside through
``promoter.daemon``.
"""

__all__: list[str] = []
