"""The Kubernetes API as the promoter speaks to it: the room at the bottom of ``kube``.

``api`` (one wrapper over the official client: every call, its errors translated once,
and ``PERMISSIONS``, the calls it makes), ``group`` (the API group of the custom
resources), ``watcher`` (list + watch into a local cache), ``token_review`` (callers
named by a TokenReview). Its modules are imported by name; it imports no other room.
"""

__all__: list[str] = []
