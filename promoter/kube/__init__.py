"""Kubernetes mode: custom resources as configuration and status, a Lease for leadership.

``promoter serve --kubernetes`` builds a ``Controller`` and serves ``ReplicaApp``;
``promoter crds`` writes the CRDs that ``crds`` generates from the pydantic models.

Names load lazily, so that the command line does not import the Kubernetes client
unless cluster mode runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promoter.kube.api import Kube, KubeError, api_client, loopback_client
    from promoter.kube.app import ReplicaApp
    from promoter.kube.cluster_scm import ClusterScm, NotLeader
    from promoter.kube.commit_statuses import CommitStatusIndex
    from promoter.kube.config_source import Assembled, assemble, config_name
    from promoter.kube.controller import Controller, KubeSettings
    from promoter.kube.crds import KINDS, crd, rendered
    from promoter.kube.events import EventRecorder
    from promoter.kube.leader import LeaderElector, LeaseSettings
    from promoter.kube.refresh import RefreshForwarder
    from promoter.kube.resources import (
        API_VERSION,
        COMMIT_STATUS_LABEL,
        GROUP,
        REFRESH_ANNOTATION,
        VERSION,
    )
    from promoter.kube.status_writer import StatusWriter
    from promoter.kube.watcher import Watcher

_WHERE = {
    "API_VERSION": "promoter.kube.resources",
    "Assembled": "promoter.kube.config_source",
    "COMMIT_STATUS_LABEL": "promoter.kube.resources",
    "ClusterScm": "promoter.kube.cluster_scm",
    "CommitStatusIndex": "promoter.kube.commit_statuses",
    "Controller": "promoter.kube.controller",
    "EventRecorder": "promoter.kube.events",
    "GROUP": "promoter.kube.resources",
    "KINDS": "promoter.kube.crds",
    "Kube": "promoter.kube.api",
    "KubeError": "promoter.kube.api",
    "KubeSettings": "promoter.kube.controller",
    "LeaderElector": "promoter.kube.leader",
    "LeaseSettings": "promoter.kube.leader",
    "NotLeader": "promoter.kube.cluster_scm",
    "REFRESH_ANNOTATION": "promoter.kube.resources",
    "RefreshForwarder": "promoter.kube.refresh",
    "ReplicaApp": "promoter.kube.app",
    "StatusWriter": "promoter.kube.status_writer",
    "VERSION": "promoter.kube.resources",
    "Watcher": "promoter.kube.watcher",
    "api_client": "promoter.kube.api",
    "assemble": "promoter.kube.config_source",
    "config_name": "promoter.kube.config_source",
    "crd": "promoter.kube.crds",
    "loopback_client": "promoter.kube.api",
    "rendered": "promoter.kube.crds",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'promoter.kube' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "API_VERSION",
    "COMMIT_STATUS_LABEL",
    "GROUP",
    "KINDS",
    "REFRESH_ANNOTATION",
    "VERSION",
    "Assembled",
    "ClusterScm",
    "CommitStatusIndex",
    "Controller",
    "EventRecorder",
    "Kube",
    "KubeError",
    "KubeSettings",
    "LeaderElector",
    "LeaseSettings",
    "NotLeader",
    "RefreshForwarder",
    "ReplicaApp",
    "StatusWriter",
    "Watcher",
    "api_client",
    "assemble",
    "config_name",
    "crd",
    "loopback_client",
    "rendered",
]
