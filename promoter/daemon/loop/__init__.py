"""The loop: a key in, a reconcile out.

Webhooks and timers put strategy keys on the work queue (``queue``); the workers
(``workers``) hand each to the reconciler (``reconciler``), which reads, decides, acts
and keeps the verdicts. The timers (``scheduler``) run the periodic resync (``resync``)
and the ref polling. Above acting, reading, the checks and memory; below the manual
operations and the runtime. Its modules are imported by their own paths inside the
daemon, and from outside through ``promoter.daemon``.
"""

__all__: list[str] = []
