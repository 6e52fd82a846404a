"""Argo CD and Flux health checks against genuine objects over real HTTP."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import responses
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from promoter.config.gates import ArgoCd, Flux
from promoter.daemon.checks.backends import Target, argocd_check
from promoter.daemon.checks.flux import flux_check
from promoter.daemon.checks.gate_calls import GateCalls
from promoter.http import ThreadServer, free_port
from promoter.models import Phase
from tests.fixture_paths import FIXTURES

APPLICATION = yaml.safe_load((FIXTURES / "argocd/application.yaml").read_text())
STATUSES = list(yaml.safe_load_all((FIXTURES / "flux/kustomization-statuses.yaml").read_text()))
ARGOCD = "https://argocd.example.com"
# The genuine Application deploys branch test-lla, synced to revision rev1.
ON_BRANCH = Target("guestbook", "test-lla", "rev1", "d" * 40)


@pytest.fixture
def argocd(monkeypatch: pytest.MonkeyPatch) -> Iterator[responses.RequestsMock]:
    monkeypatch.setenv("ARGOCD_TOKEN", "argocd-test-token")
    with responses.RequestsMock() as mock:
        yield mock


def spec(**extra: Any) -> ArgoCd:
    return ArgoCd.model_validate({"server": ARGOCD, "token": {"fromEnv": "ARGOCD_TOKEN"}, **extra})


def serve_apps(mock: responses.RequestsMock, *apps: dict[str, Any]) -> None:
    mock.get(f"{ARGOCD}/api/v1/applications", json={"items": list(apps)})


def changed(**status: Any) -> dict[str, Any]:
    app = copy.deepcopy(APPLICATION)
    for key, value in status.items():
        app["status"][key] = {**app["status"][key], **value}
    return app


def test_a_synced_healthy_application_passes(argocd: responses.RequestsMock) -> None:
    serve_apps(argocd, APPLICATION)
    result = argocd_check(
        "promoter/argocd", spec(selector="project=sre"), ON_BRANCH, requests.Session()
    )
    assert result.phase is Phase.SUCCESS
    sent = argocd.calls[0].request
    assert sent.headers["Authorization"] == "Bearer argocd-test-token"
    assert "selector=project%3Dsre" in str(sent.url)


@pytest.mark.parametrize(
    ("status", "phase", "words"),
    [
        ({"health": {"status": "Degraded"}}, Phase.FAILURE, "velero-test Degraded"),
        ({"health": {"status": "Progressing"}}, Phase.PENDING, "velero-test Progressing"),
        ({"sync": {"status": "OutOfSync"}}, Phase.PENDING, "not synced to rev1"),
        ({"sync": {"revision": "rev0"}}, Phase.PENDING, "not synced to rev1"),
    ],
)
def test_degraded_fails_and_anything_unfinished_waits(
    argocd: responses.RequestsMock, status: dict[str, Any], phase: Phase, words: str
) -> None:
    serve_apps(argocd, changed(**status))
    result = argocd_check("promoter/argocd", spec(), ON_BRANCH, requests.Session())
    assert result.phase is phase
    assert words in result.description


def test_applications_of_other_branches_or_names_are_left_out(
    argocd: responses.RequestsMock,
) -> None:
    serve_apps(argocd, APPLICATION)
    other_branch = Target("guestbook", "environment/prod", "rev1", "d" * 40)
    assert argocd_check("k", spec(), other_branch, requests.Session()).phase is Phase.PENDING
    serve_apps(argocd, APPLICATION)
    named = argocd_check("k", spec(applications=["guestbook-prod"]), ON_BRANCH, requests.Session())
    assert named.phase is Phase.PENDING
    assert "no Argo CD application deploys test-lla" in named.description


def test_an_unreachable_argo_cd_keeps_the_gate_pending(argocd: responses.RequestsMock) -> None:
    argocd.get(f"{ARGOCD}/api/v1/applications", body=requests.ConnectionError("refused"))
    judged = GateCalls().judge(
        key="promoter/argocd",
        what="Argo CD",
        backend="argocd",
        timeout=5,
        check=lambda: argocd_check("promoter/argocd", spec(), ON_BRANCH, requests.Session()),
    )
    assert judged.trouble
    assert judged.status.phase is Phase.PENDING
    assert judged.status.description == "Argo CD not reachable: refused"


# --- Flux, through the official kubernetes client over real HTTP --------------------------

APPLIED = "a1afe267b54f38b46b487f6e938a6fd508278c07"


@pytest.fixture
def kube() -> Iterator[dict[str, dict[str, Any]]]:
    """A Kubernetes API on 127.0.0.1 serving Kustomization objects by name."""
    objects: dict[str, dict[str, Any]] = {}

    async def get(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        if name not in objects:
            return JSONResponse({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)
        return JSONResponse(objects[name])

    path = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/{name}"
    port = free_port()
    server = ThreadServer(Starlette(routes=[Route(path, get)]), port).start()
    objects["__url__"] = {"url": f"http://127.0.0.1:{port}"}
    try:
        yield objects
    finally:
        server.stop(10)


def custom_objects(kube: dict[str, dict[str, Any]]) -> Any:
    from kubernetes import client

    configuration = client.Configuration(host=kube["__url__"]["url"])
    return client.CustomObjectsApi(client.ApiClient(configuration))


def kustomization(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        **status,
    }


def test_a_kustomization_that_applied_the_commit_and_is_ready_passes(
    kube: dict[str, dict[str, Any]],
) -> None:
    kube["guestbook-prod"] = kustomization("guestbook-prod", STATUSES[0])
    target = Target("guestbook", "environment/prod", APPLIED, "d" * 40)
    result = flux_check(
        "promoter/flux", Flux(kustomizations=["guestbook-prod"]), target, custom_objects(kube)
    )
    assert result.phase is Phase.SUCCESS


def test_a_failed_reconciliation_fails_and_one_in_progress_waits(
    kube: dict[str, dict[str, Any]],
) -> None:
    target = Target("guestbook", "environment/prod", APPLIED, "d" * 40)
    kube["failed"] = kustomization("failed", STATUSES[2])
    failed = flux_check("f", Flux(kustomizations=["failed"]), target, custom_objects(kube))
    assert failed.phase is Phase.FAILURE
    assert "ValidationFailed" in failed.description
    kube["busy"] = kustomization("busy", {"status": {"conditions": STATUSES[1]["conditions"]}})
    busy = flux_check("f", Flux(kustomizations=["busy"]), target, custom_objects(kube))
    assert busy.phase is Phase.PENDING


def test_an_older_applied_revision_or_a_missing_object_waits(
    kube: dict[str, dict[str, Any]],
) -> None:
    kube["guestbook-prod"] = kustomization("guestbook-prod", STATUSES[0])
    newer = Target("guestbook", "environment/prod", "b" * 40, "d" * 40)
    api = custom_objects(kube)
    assert (
        flux_check("f", Flux(kustomizations=["guestbook-prod"]), newer, api).phase is Phase.PENDING
    )
    missing = flux_check("f", Flux(kustomizations=["absent"]), newer, api)
    assert missing.phase is Phase.PENDING
    assert "Kustomization absent not found in flux-system" in missing.description
