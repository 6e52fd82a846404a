"""Every call to the Kubernetes API has a deadline: an API server that does not answer
fails the call, it does not hold the thread (the controller's, a Lease renewal's)."""

from __future__ import annotations

import threading

import pytest

from promoter.kube.client import api
from promoter.kube.client.api import Kube, KubeError
from promoter.kube.client.connect import loopback_client
from tests.faults.standins import Standin


def test_an_api_server_that_does_not_answer_fails_the_call_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(api, "REQUEST_TIMEOUT", (0.2, 0.3), raising=False)
    outcome: list[BaseException | None] = []
    with Standin(lambda *_: (200, "application/json", b"{}")) as server:
        server.mode = "hang"
        kube = Kube(loopback_client(server.url))
        kube.client.configuration.retries = False

        def read() -> None:
            try:
                kube.read_lease("team", "promoter-leader")
                outcome.append(None)
            except KubeError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        thread.join(60)  # the server never answers: only the call's own deadline ends it
    assert outcome and isinstance(outcome[0], KubeError), outcome
    assert "unreachable" in str(outcome[0])
