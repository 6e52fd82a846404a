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
    from promoter.kube.app import ReplicaApp
    from promoter.kube.client.api import Kube, KubeError, api_client, loopback_client
    from promoter.kube.client.group import GROUP, VERSION
    from promoter.kube.client.watcher import Watcher
    from promoter.kube.controller import Controller, KubeSettings
    from promoter.kube.leadership.elector import LeaderElector, LeaseSettings
    from promoter.kube.leadership.mode import NotLeader
    from promoter.kube.resources.commit_statuses import CommitStatusIndex
    from promoter.kube.resources.config_source import Assembled, assemble, config_name
    from promoter.kube.resources.crds import KINDS, crd, rendered
    from promoter.kube.resources.events import EventRecorder
    from promoter.kube.resources.refresh import RefreshForwarder
    from promoter.kube.resources.specs import API_VERSION, COMMIT_STATUS_LABEL, REFRESH_ANNOTATION
    from promoter.kube.resources.status_writer import StatusWriter
    from promoter.kube.runtime.scm import ClusterScm

_WHERE = {
    "API_VERSION": "promoter.kube.resources.specs",
    "Assembled": "promoter.kube.resources.config_source",
    "COMMIT_STATUS_LABEL": "promoter.kube.resources.specs",
    "ClusterScm": "promoter.kube.runtime.scm",
    "CommitStatusIndex": "promoter.kube.resources.commit_statuses",
    "Controller": "promoter.kube.controller",
    "EventRecorder": "promoter.kube.resources.events",
    "GROUP": "promoter.kube.client.group",
    "KINDS": "promoter.kube.resources.crds",
    "Kube": "promoter.kube.client.api",
    "KubeError": "promoter.kube.client.api",
    "KubeSettings": "promoter.kube.controller",
    "LeaderElector": "promoter.kube.leadership.elector",
    "LeaseSettings": "promoter.kube.leadership.elector",
    "NotLeader": "promoter.kube.leadership.mode",
    "REFRESH_ANNOTATION": "promoter.kube.resources.specs",
    "RefreshForwarder": "promoter.kube.resources.refresh",
    "ReplicaApp": "promoter.kube.app",
    "StatusWriter": "promoter.kube.resources.status_writer",
    "VERSION": "promoter.kube.client.group",
    "Watcher": "promoter.kube.client.watcher",
    "api_client": "promoter.kube.client.api",
    "assemble": "promoter.kube.resources.config_source",
    "config_name": "promoter.kube.resources.config_source",
    "crd": "promoter.kube.resources.crds",
    "loopback_client": "promoter.kube.client.api",
    "rendered": "promoter.kube.resources.crds",
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
