"""A replica's HTTP server: at SIGTERM it hands its work over while it still answers.

uvicorn's own SIGTERM handling closes the listening socket first and runs the app's
shutdown after it, so a sharded replica's shards would stay held, until the shutdown
hands them over, by a replica nobody can reach: a write another replica passes to it
meets a closed port, and so does a webhook a Service still routes to it (Kubernetes
takes the Pod out of the endpoints while the SIGTERM is sent, not before). Here a
SIGTERM first has the replica's mode hand its work over (``Controller.leave``: sharded,
every shard) with the server answering; a write for one of them is refused by the
fence as moved and sent on, by the replica that passed it, to the next owner. Then
uvicorn shuts down as usual (one leader has nothing to hand over before: its Lease is
released at shutdown). A second SIGTERM, or a SIGINT, shuts down at once.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from promoter.http import uvicorn_options

if TYPE_CHECKING:
    from promoter.kube.controller import Controller

log = logging.getLogger("promoter.kube.serving")

GRACE_SECONDS = 60
"""How long uvicorn's shutdown waits for the requests in progress."""


def serve_replica(controller: Controller, *, host: str, port: int) -> bool:
    """Serve the replica (``ReplicaApp``) until SIGTERM; whether it started."""
    from promoter.kube.app import ReplicaApp

    config = uvicorn.Config(
        ReplicaApp(controller),
        **uvicorn_options(host=host, port=port),
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    server = ReplicaServer(config, controller)
    server.run()
    return server.started


class ReplicaServer(uvicorn.Server):
    """uvicorn for one replica (``ReplicaApp``)."""

    def __init__(self, config: uvicorn.Config, controller: Controller) -> None:
        super().__init__(config)
        self.controller = controller
        self.leaving: threading.Thread | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig != signal.SIGTERM or self.leaving is not None:
            super().handle_exit(sig, frame)
            return
        self.leaving = threading.Thread(
            target=self._leave, args=(sig, frame), name="leaving", daemon=True
        )
        self.leaving.start()

    def _leave(self, sig: int, frame: FrameType | None) -> None:
        try:
            self.controller.leave()
        except Exception:  # the shutdown hands over what is left
            log.exception("handing the work over failed")
        finally:
            super().handle_exit(sig, frame)
