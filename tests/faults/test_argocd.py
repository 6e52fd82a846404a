"""Argo CD misbehaving: dev's health check waits with Argo CD's words, staging does not merge
behind it, and dev itself and every other strategy merge as usual."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.faults.harness import DEV, TIMEOUT, Faulted, Faulty, blocked_behind, faulted
from tests.faults.standins import Answer, Standin

KEY = "promoter/argocd"
TOKEN = "PROMOTER_FAULTS_ARGOCD_TOKEN"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures/argocd/application.yaml"
WORDS = {
    "hang": ("Argo CD not reachable: no answer within 0.3s",),
    "slow": ("Argo CD not reachable: answer not complete after",),
    "5xx": ("Argo CD not reachable: answered 503: upstream overloaded",),
    "garbage": ("Argo CD answered garbage: not JSON: <html>oops</html>",),
    "reset": ("Argo CD not reachable: [Errno 104] Connection reset by peer",),
}


def applications(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    """The genuine Application, deploying dev, not synced to it yet (the gate waits)."""
    app = yaml.safe_load(FIXTURE.read_text())
    app["spec"]["source"]["targetRevision"] = DEV
    return 200, "application/json", json.dumps({"items": [app]}).encode()


def gate(server: str, token: str = "PROMOTER_FAULTS_ARGOCD_SET") -> str:
    return (
        f"gates: [{{argocd: {{server: '{server}', token: {{fromEnv: {token}}},"
        f" interval: 0.2s, timeout: {TIMEOUT}}}}}]"
    )


def passed(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    return 200, "application/json", json.dumps({"verdict": "success"}).encode()


@pytest.fixture(scope="module")
def standin() -> Iterator[Standin]:
    with Standin(applications) as server:
        yield server


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, standin: Standin) -> Iterator[Faulted]:
    root = tmp_path_factory.mktemp("argocd")
    with Standin(passed) as smoke:
        siblings = gate(standin.url)[:-1] + (
            f", {{name: smoke, http: {{url: '{smoke.url}/{{sha}}', expression: verdict,"
            f" interval: 0.2s, timeout: {TIMEOUT}}}}}]"
        )
        faulty = [
            Faulty("faulty", dev=gate(standin.url)),
            Faulty("faulty-tls", dev=gate(standin.url.replace("http://", "https://"))),
            Faulty("faulty-credentials", dev=gate(standin.url, token=TOKEN)),
            Faulty("faulty-siblings", dev=siblings),
        ]
        yield from _started(root, faulty)


def _started(root: Path, faulty: list[Faulty]) -> Iterator[Faulted]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PROMOTER_FAULTS_ARGOCD_SET", "argocd-fault-suite-token")
        env.delenv(TOKEN, raising=False)
        with faulted(root, faulty) as world:
            yield world


@pytest.mark.parametrize("mode", list(WORDS))
def test_a_misbehaving_argo_cd_keeps_the_health_check_pending_in_its_words(
    world: Faulted, standin: Standin, mode: str
) -> None:
    standin.mode = mode
    said = blocked_behind(world, "faulty", KEY, WORDS[mode])
    assert "argocd-fault-suite-token" not in said


def test_a_tls_error_keeps_the_health_check_pending_in_its_words(
    world: Faulted, standin: Standin
) -> None:
    standin.mode = "ok"
    blocked_behind(world, "faulty-tls", KEY, ("Argo CD not reachable: [SSL",))


def test_a_missing_token_keeps_the_health_check_pending_and_names_it(
    world: Faulted, standin: Standin
) -> None:
    standin.mode = "ok"
    words = f"Argo CD not reachable: missing credentials: environment variable {TOKEN} is not set"
    blocked_behind(world, "faulty-credentials", KEY, (words,))


def test_argo_cd_answering_garbage_stops_no_other_gate_of_its_environment(
    world: Faulted, standin: Standin
) -> None:
    """dev has Argo CD (its health) and an HTTP check (its PRs): Argo CD's garbage leaves
    the check judged, so dev merges on it, and the health check waits in its own words."""
    standin.mode = "garbage"
    said = blocked_behind(world, "faulty-siblings", KEY, WORDS["garbage"])
    assert said.startswith("Argo CD answered garbage")
    head = world.repos["faulty-siblings"].tip(f"{DEV}-next")  # the PR dev merged
    assert world.checks("faulty-siblings", head)["promoter/smoke"].phase.value == "success"
