"""Checks: the gates that ask other systems, run in the background.

``probes`` runs the HTTP, Argo CD (``backends``) and Flux (``flux``) checks outside
every reconcile, on threads of its own (``lanes``), and publishes each changed result as
a commit status. Every call to a backend goes through one contract (``gate_calls``, the
answer read in ``answers``): a deadline, a bound per backend, and a pending verdict in
the backend's words instead of any exception. At the bottom, beside memory: it imports
no other room. Its modules are imported by their own paths inside the daemon, and from
outside through ``promoter.daemon``.
"""

__all__: list[str] = []
