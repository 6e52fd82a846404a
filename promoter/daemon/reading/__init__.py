"""Reading: one strategy's snapshot, from the mirror, the SCM and the caches.

``reader`` builds the ``Snapshot`` the engine decides on, with what each strategy's
configuration gives it worked out once (``shapes``) and what it asks the mirror about
the commits (``commit_facts``); then one function per part of an environment's snapshot:
approvals (``approvals``: the reviews, read through ``review_reads``, the reviewers to
request, the change's authors), dry commits' signatures (``signature_check``), merge
queues (``queue_detection``), deployments (``deployment_target``); people's freezes
(``freezes``). ``status_targets`` says which
commits a status counts on; ``scope`` which repositories and strategies the daemon works
on. Above the checks and memory; below acting. Its modules are imported by their own
paths inside the daemon, and from outside through ``promoter.daemon``.
"""

__all__: list[str] = []
