"""Kubernetes mode: custom resources as configuration and status, one leader or shards.

``promoter serve --kubernetes`` builds a ``Controller`` and serves ``ReplicaApp``
(``serve_kubernetes``); ``promoter crds`` writes the CRDs that ``crds`` generates from
the pydantic models. Code outside this package imports it from here alone.

The rooms, from the top down (each imports only those below it; ``kube-rooms`` in
pyproject.toml): the command line, the server, the app and the ``Controller`` at the
top; ``shards/`` (sharded replicas: the shard Leases, the fence, forwarding, and their
HTTP face); ``leadership/`` (the leader Lease, and the mode with one leader);
``runtime/`` (the daemon's runtime and SCM plugins as a replica runs them, and the
``Mode`` both modes are); ``resources/`` (the custom resources: models, CRDs, the
``Config`` built from them, statuses and Events); ``client/`` (the Kubernetes API).

Names load lazily, so that the command line does not import the Kubernetes client
unless cluster mode runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promoter.kube.app import ReplicaApp
    from promoter.kube.cli import add_serve_arguments, cmd_crds, crds_arguments, serve_kubernetes
    from promoter.kube.client.api import LIST_PAGE, Kube, KubeError
    from promoter.kube.client.connect import api_client, loopback_client
    from promoter.kube.client.group import GROUP, VERSION
    from promoter.kube.client.watcher import Watcher
    from promoter.kube.controller import Controller, KubeSettings
    from promoter.kube.leadership.elector import LeaderElector, LeaseSettings
    from promoter.kube.leadership.mode import LeaderMode, NotLeader, leader_guard
    from promoter.kube.resources.commit_statuses import CommitStatusIndex
    from promoter.kube.resources.config_source import (
        Assembled,
        SecretFiles,
        assemble,
        config_name,
        object_key,
    )
    from promoter.kube.resources.crds import KINDS, crd, rendered
    from promoter.kube.resources.events import EventRecorder
    from promoter.kube.resources.refresh import RefreshForwarder
    from promoter.kube.resources.specs import API_VERSION, COMMIT_STATUS_LABEL, REFRESH_ANNOTATION
    from promoter.kube.resources.status_writer import StatusWriter
    from promoter.kube.runtime.mode import Mode
    from promoter.kube.runtime.scm import ClusterScm
    from promoter.kube.serving import serve_replica
    from promoter.kube.shards.mode import ShardedMode
    from promoter.kube.shards.settings import ShardSettings
    from promoter.kube.shards.spending import LeaseFleet

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
    "LIST_PAGE": "promoter.kube.client.api",
    "LeaderElector": "promoter.kube.leadership.elector",
    "LeaderMode": "promoter.kube.leadership.mode",
    "LeaseSettings": "promoter.kube.leadership.elector",
    "Mode": "promoter.kube.runtime.mode",
    "NotLeader": "promoter.kube.leadership.mode",
    "REFRESH_ANNOTATION": "promoter.kube.resources.specs",
    "RefreshForwarder": "promoter.kube.resources.refresh",
    "ReplicaApp": "promoter.kube.app",
    "SecretFiles": "promoter.kube.resources.config_source",
    "ShardSettings": "promoter.kube.shards.settings",
    "LeaseFleet": "promoter.kube.shards.spending",
    "ShardedMode": "promoter.kube.shards.mode",
    "StatusWriter": "promoter.kube.resources.status_writer",
    "VERSION": "promoter.kube.client.group",
    "Watcher": "promoter.kube.client.watcher",
    "add_serve_arguments": "promoter.kube.cli",
    "api_client": "promoter.kube.client.connect",
    "assemble": "promoter.kube.resources.config_source",
    "cmd_crds": "promoter.kube.cli",
    "config_name": "promoter.kube.resources.config_source",
    "crd": "promoter.kube.resources.crds",
    "crds_arguments": "promoter.kube.cli",
    "leader_guard": "promoter.kube.leadership.mode",
    "loopback_client": "promoter.kube.client.connect",
    "object_key": "promoter.kube.resources.config_source",
    "rendered": "promoter.kube.resources.crds",
    "serve_kubernetes": "promoter.kube.cli",
    "serve_replica": "promoter.kube.serving",
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
    "LIST_PAGE",
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
    "LeaderMode",
    "LeaseFleet",
    "LeaseSettings",
    "Mode",
    "NotLeader",
    "RefreshForwarder",
    "ReplicaApp",
    "SecretFiles",
    "ShardSettings",
    "ShardedMode",
    "StatusWriter",
    "Watcher",
    "add_serve_arguments",
    "api_client",
    "assemble",
    "cmd_crds",
    "config_name",
    "crd",
    "crds_arguments",
    "leader_guard",
    "loopback_client",
    "object_key",
    "rendered",
    "serve_kubernetes",
    "serve_replica",
]
