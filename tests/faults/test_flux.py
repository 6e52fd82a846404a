"""Flux health read through a Kubernetes API that misbehaves: dev's health check waits with
the API's words, staging does not merge behind it, and dev itself and every other strategy
merge as usual. The API is a stand-in on 127.0.0.1 reached through a kubeconfig, as the
promoter reaches a real one; its Kustomization carries a genuine Flux status."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.config import kube_config

from tests.faults.harness import TIMEOUT, Faulted, Faulty, blocked_behind, faulted
from tests.faults.standins import Answer, Standin

KEY = "promoter/flux"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures/flux/kustomization-statuses.yaml"
PATH = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/guestbook"
GATE = "gates: [{flux: {kustomizations: [guestbook], interval: 0.2s, timeout: " + TIMEOUT + "}}]"
WORDS = {
    "hang": ("flux: Kubernetes API not reachable: no answer within 0.3s",),
    "slow": ("flux: Kubernetes API not reachable: answer not complete after",),
    "5xx": ("flux: Kubernetes API not reachable: answered 503: upstream overloaded",),
    "garbage": ("flux: Kubernetes API answered garbage: not JSON: <html>oops</html>",),
    "reset": ("flux: Kubernetes API not reachable: [Errno 104] Connection reset by peer",),
}


def kustomization(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    """The Kustomization guestbook, Ready on a revision dev does not run (the gate waits)."""
    if path != PATH or headers.get("authorization") != "Bearer kube-fault-suite-token":
        status = {"kind": "Status", "code": 404, "reason": "NotFound"}
        return 404, "application/json", json.dumps(status).encode()
    ready = next(yaml.safe_load_all(FIXTURE.read_text()))
    obj = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", **ready}
    return 200, "application/json", json.dumps(obj).encode()


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "standin", "cluster": {"server": server}}],
                "users": [{"name": "promoter", "user": {"token": "kube-fault-suite-token"}}],
                "contexts": [
                    {"name": "standin", "context": {"cluster": "standin", "user": "promoter"}}
                ],
                "current-context": "standin",
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def standin() -> Iterator[Standin]:
    with Standin(kustomization) as server:
        yield server


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, standin: Standin) -> Iterator[Faulted]:
    root = tmp_path_factory.mktemp("flux")
    config = kubeconfig(root / "kubeconfig", standin.url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(config))
        with faulted(root, [Faulty("faulty", dev=GATE)]) as world:
            yield world


@pytest.mark.parametrize("mode", list(WORDS))
def test_a_misbehaving_kubernetes_api_keeps_the_health_check_pending_in_its_words(
    world: Faulted, standin: Standin, mode: str
) -> None:
    standin.mode = mode
    said = blocked_behind(world, "faulty", KEY, WORDS[mode])
    assert "kube-fault-suite-token" not in said


def test_a_tls_error_keeps_the_health_check_pending_in_its_words(
    world: Faulted, standin: Standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin.mode = "ok"
    config = kubeconfig(tmp_path / "kubeconfig", standin.url.replace("http://", "https://"))
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(config))
    with faulted(tmp_path, [Faulty("faulty", dev=GATE)], usual=world.usual) as tls:
        blocked_behind(tls, "faulty", KEY, ("flux: Kubernetes API not reachable: SSLError",))


def test_no_kubeconfig_keeps_the_health_check_pending_and_says_so(
    world: Faulted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "none"))
    words = (
        "flux: Kubernetes API not reachable: missing credentials: Invalid kube-config file."
        " No configuration found.",
    )
    with faulted(tmp_path, [Faulty("faulty", dev=GATE)], usual=world.usual) as lost:
        blocked_behind(lost, "faulty", KEY, words)
