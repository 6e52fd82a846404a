"""One replica of ``bench/shards.py``: a process as ``promoter serve --kubernetes --shards``
runs it, on the Kubernetes API stand-in, with every replica's local SCM in one shared
database, and each write that passed the fence written to an audit log.

    python bench/shard_replica.py --name r1 --port 9001 --api http://127.0.0.1:8001 ...

The audit log (one JSON line per pull request opened or merged, appended with
``O_APPEND``, so lines from several processes never interleave) is how the benchmark
counts duplicate pull requests and double merges: a real SCM would have refused or
duplicated what the local one turns into a no-op.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from promoter.config import Config, ScmProvider  # noqa: E402
from promoter.kube import (  # noqa: E402
    Controller,
    Kube,
    KubeSettings,
    LeaseSettings,
    ShardSettings,
    loopback_client,
    serve_replica,
)
from promoter.logs import setup as setup_logs  # noqa: E402
from scm_plugins.local import LocalScm  # noqa: E402
from scm_plugins.protocol import ScmPlugin  # noqa: E402


class Audited:
    """The local SCM, with each pull request opened or merged written to the audit log."""

    def __init__(self, inner: LocalScm, path: Path, replica: str) -> None:
        self.inner = inner
        self.path = path
        self.replica = replica

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _log(self, **fields: Any) -> None:
        line = json.dumps({"replica": self.replica, "at": time.time(), **fields}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def open_pull_request(self, **kwargs: Any) -> Any:
        sent = time.time()  # when the write went out: a pause after it is not the fence's
        pr = self.inner.open_pull_request(**kwargs)
        repo, head = kwargs["repo"].name, kwargs["head"]
        self._log(op="open", repo=repo, head=head, number=pr.number, sent=sent)
        return pr

    def merge_pull_request(self, **kwargs: Any) -> str:
        sent = time.time()
        merged = self.inner.merge_pull_request(**kwargs)
        self._log(
            op="merge",
            repo=kwargs["repo"].name,
            number=kwargs["number"],
            head_sha=kwargs["expected_head_sha"],
            sent=sent,
        )
        return merged


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--api", required=True, help="the Kubernetes API stand-in's URL")
    p.add_argument("--namespace", default="bench")
    p.add_argument("--state", required=True, help="this replica's state directory")
    p.add_argument("--scm", required=True, help="the shared local SCM's directory")
    p.add_argument("--audit", required=True)
    p.add_argument("--token", required=True, help="the replicas' peer secret")
    p.add_argument("--shards", type=int, default=64)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--lease-duration", type=float, default=5.0)
    p.add_argument("--renew-deadline", type=float, default=3.0)
    p.add_argument("--retry-period", type=float, default=1.0)
    args = p.parse_args()
    level = os.environ.get("BENCH_LOG_LEVEL")
    if level:  # the replica's own structured logs, to see where time went
        setup_logs(level.lower(), json_lines=True, stream=sys.stdout)
    else:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    base = Config.model_validate(
        {
            "daemon": {
                "stateDir": args.state,
                "host": "127.0.0.1",
                "port": args.port,
                "workers": args.workers,
                "resyncInterval": 120,
            }
        }
    )
    audit = Path(args.audit)

    def local(provider: ScmProvider, state_dir: str) -> ScmPlugin:
        inner = LocalScm(provider=provider, state_dir=args.scm)
        return Audited(inner, audit, args.name)  # type: ignore[return-value]

    lease = LeaseSettings(
        namespace=args.namespace,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
    )
    shards = ShardSettings(
        count=args.shards, address=f"http://127.0.0.1:{args.port}", peer_token=args.token
    )
    settings = KubeSettings(args.namespace, lease, args.name, plugin_factory=local, shards=shards)
    controller = Controller(Kube(loopback_client(args.api)), base, settings)
    serve_replica(controller, host="127.0.0.1", port=args.port)  # SIGTERM: it leaves, then stops


if __name__ == "__main__":
    main()
