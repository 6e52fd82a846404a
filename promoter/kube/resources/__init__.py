"""The custom resources: what the cluster holds of the promoter, read and written.

``specs`` (their specs and statuses as pydantic models), ``crds`` (the CRDs generated
from them), ``config_source`` (the objects turned into a ``Config``), ``status`` and
``status_writer`` (their status, computed and written when it changed),
``commit_statuses`` and ``commit_status_sync`` (CommitStatus objects as gates, mirrored
on the SCM), ``events`` (Kubernetes Events for what was done), ``publisher`` (those
writes off the reconciles), ``refresh`` (work handed to its owner through a strategy's
annotation). Its modules are imported by name; it imports only ``client``.
"""

__all__: list[str] = []
