"""Reading: one strategy's snapshot, from the mirror, the SCM and the caches.

``reader`` builds the ``Snapshot`` the engine decides on, with what each strategy's
configuration gives it worked out once (``shapes``) and what it asks the mirror about
the commits (``commit_facts``); the reads it makes for some gates: reviews
(``review_reads``), dry commits' signatures (``signature_check``), merge queues
(``queue_detection``), people's freezes (``freezes``). ``status_targets`` says which
commits a status counts on; ``scope`` which repositories and strategies the daemon works
on. Above the checks and memory; below acting. Its modules are imported by their own
paths inside the daemon, and from outside through ``promoter.daemon``.
"""

__all__: list[str] = []
