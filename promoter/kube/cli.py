"""``promoter serve --kubernetes`` and ``promoter crds``: the command-line side of cluster mode."""

from __future__ import annotations

import argparse
import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from promoter.config import Config
from promoter.errors import ConfigError

if TYPE_CHECKING:
    from promoter.kube.shards.settings import ShardSettings

log = logging.getLogger("promoter.kube.cli")

NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
STARTUP_FAILURE = 3
"""The exit status when the replica did not start (uvicorn's, for the same)."""


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``serve`` that only cluster mode reads."""
    group = parser.add_argument_group("Kubernetes mode")
    group.add_argument(
        "--kubernetes",
        action="store_true",
        help="read strategies from custom resources; --config then gives daemon and webhooks",
    )
    group.add_argument("--namespace", help="watch this namespace (default: the pod's own)")
    group.add_argument("--all-namespaces", action="store_true", help="watch every namespace")
    group.add_argument(
        "--kubeconfig", metavar="PATH", help="outside a cluster: this kubeconfig file"
    )
    group.add_argument("--lease-name", default="promoter-leader", help="the Lease to hold")
    group.add_argument("--lease-namespace", help="default: the watched namespace or the pod's")
    group.add_argument(
        "--lease-duration",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="another replica takes over a Lease unrenewed this long",
    )
    group.add_argument(
        "--renew-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a leader that could not renew this long stops writing",
    )
    group.add_argument(
        "--retry-period",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often the Lease is renewed or tried",
    )
    group.add_argument("--identity", help="this replica's name in the Lease (default: POD_NAME)")
    group.add_argument(
        "--shards",
        type=int,
        default=0,
        metavar="N",
        help="shard the repositories into N shards over every live replica (0: one leader)",
    )
    group.add_argument(
        "--shard-group",
        default="promoter",
        help="the prefix and label of the member and shard Leases",
    )
    group.add_argument(
        "--advertise-address",
        metavar="URL",
        help="where other replicas reach this one (default: http://$POD_IP:PORT)",
    )
    group.add_argument(
        "--peer-token-env",
        default="PROMOTER_PEER_TOKEN",
        metavar="NAME",
        help="the variable holding the secret replicas sign forwarded work with",
    )


def crds_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", default="manifests/crds", metavar="PATH", help="the directory to write into"
    )


def cmd_crds(args: argparse.Namespace) -> int:
    from promoter.kube.resources.crds import write

    for path in write(Path(args.out)):
        print(path)
    return 0


def _own_namespace() -> str:
    try:
        return NAMESPACE_FILE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def shard_settings(args: argparse.Namespace, base: Config) -> ShardSettings | None:
    """What ``--shards`` and its companions ask for; None for one leader."""
    from promoter.kube.shards.settings import ShardSettings

    if not args.shards:
        return None
    address = args.advertise_address or (
        f"http://{os.environ.get('POD_IP') or socket.gethostname()}:{base.daemon.port}"
    )
    owner = None
    if os.environ.get("POD_UID") and os.environ.get("POD_NAME"):
        pod = {"name": os.environ["POD_NAME"], "uid": os.environ["POD_UID"]}
        owner = {"apiVersion": "v1", "kind": "Pod", **pod}
    token = os.environ.get(args.peer_token_env) or None
    if token is None:
        log.warning(
            "no peer token: forwarded work goes through the API server",
            extra={"variable": args.peer_token_env},
        )
    return ShardSettings(
        count=args.shards, group=args.shard_group, address=address, peer_token=token, owner=owner
    )


def serve_kubernetes(args: argparse.Namespace, base: Config) -> int:
    """Run one replica until SIGTERM."""
    from promoter.kube.client.api import Kube
    from promoter.kube.client.connect import api_client
    from promoter.kube.controller import Controller, KubeSettings
    from promoter.kube.leadership.elector import LeaseSettings
    from promoter.kube.serving import serve_replica

    if base.scm_providers or base.repositories or base.promotion_strategies:
        raise ConfigError(
            [
                "in Kubernetes mode scmProviders, repositories and promotionStrategies come from "
                "custom resources; keep only daemon and webhooks in --config"
            ]
        )
    namespace = None if args.all_namespaces else (args.namespace or _own_namespace())
    identity = args.identity or os.environ.get("POD_NAME") or socket.gethostname()
    lease = LeaseSettings(
        namespace=args.lease_namespace or namespace or _own_namespace(),
        name=args.lease_name,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
    )
    kube = Kube(api_client(kubeconfig=args.kubeconfig))
    settings = KubeSettings(namespace, lease, identity, shards=shard_settings(args, base))
    controller = Controller(kube, base, settings)
    started = serve_replica(controller, host=base.daemon.host, port=base.daemon.port)
    return 0 if started else STARTUP_FAILURE
