"""A client of the API server: in-cluster credentials or a kubeconfig, and a connection
pool sized for what a replica keeps open at once."""

from __future__ import annotations

import kubernetes.client as k8s
from kubernetes import config as k8s_config

from promoter.errors import ConfigError

CONNECTIONS = 32
"""Connections kept open to the API server: the watches hold one each (five), the
shard Lease writers up to eight at once, the workers their status writes; the client's
default (five per CPU) is ten on a small node, and every connection past it is closed
after its call and opened again for the next (a TLS handshake each, in a cluster)."""


def _configuration() -> k8s.Configuration:
    configuration = k8s.Configuration()
    configuration.connection_pool_maxsize = CONNECTIONS
    return configuration


def api_client(*, kubeconfig: str | None = None, context: str | None = None) -> k8s.ApiClient:
    """In-cluster credentials when running in a pod, else the kubeconfig file."""
    configuration = _configuration()
    try:
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    except k8s_config.ConfigException:
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        except (k8s_config.ConfigException, OSError) as exc:
            raise ConfigError(
                [f"not in a cluster and no usable kubeconfig ({kubeconfig or '~/.kube/config'})"]
            ) from exc
    return k8s.ApiClient(configuration)


def loopback_client(url: str) -> k8s.ApiClient:
    """A client for an API server at ``url`` without credentials (tests, ``kubectl proxy``)."""
    configuration = _configuration()
    configuration.host = url
    return k8s.ApiClient(configuration)
