"""An HTTP check whose endpoint misbehaves: the check waits with the endpoint's words, its
environment does not merge, and every other environment and strategy merges as usual."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.faults.harness import TIMEOUT, Faulted, Faulty, blocked_alone, faulted
from tests.faults.standins import Answer, Standin

KEY = "promoter/smoke"
TOKEN = "PROMOTER_FAULTS_SMOKE_TOKEN"
WORDS = {
    "hang": ("check not reachable: no answer within 0.3s",),
    "slow": ("check not reachable: answer not complete after",),
    "5xx": ("check not reachable: answered 503: upstream overloaded",),
    "garbage": ("check answered garbage: not JSON: <html>oops</html>",),
    "reset": ("check not reachable: [Errno 104] Connection reset by peer",),
}


def verdict(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    return 200, "application/json", json.dumps({"verdict": "success"}).encode()


def gate(url: str, header: str = "") -> str:
    headers = f", headers: {{Authorization: {{fromEnv: {header}}}}}" if header else ""
    return (
        f"gates: [{{name: smoke, http: {{url: '{url}/verify/{{sha}}', expression: verdict,"
        f" interval: 0.2s, timeout: {TIMEOUT}{headers}}}}}]"
    )


@pytest.fixture(scope="module")
def standin() -> Iterator[Standin]:
    with Standin(verdict) as server:
        yield server


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, standin: Standin) -> Iterator[Faulted]:
    root = tmp_path_factory.mktemp("http-check")
    tls = standin.url.replace("http://", "https://")
    faulty = [
        Faulty("faulty", staging=gate(standin.url)),
        Faulty("faulty-tls", staging=gate(tls)),
        Faulty("faulty-credentials", staging=gate(standin.url, header=TOKEN)),
    ]
    with pytest.MonkeyPatch.context() as env:
        env.delenv(TOKEN, raising=False)
        with faulted(root, faulty) as world:
            yield world


@pytest.mark.parametrize("mode", list(WORDS))
def test_a_misbehaving_endpoint_keeps_the_check_pending_in_its_words(
    world: Faulted, standin: Standin, mode: str
) -> None:
    standin.mode = mode
    blocked_alone(world, "faulty", KEY, WORDS[mode])


def test_a_tls_error_keeps_the_check_pending_in_its_words(world: Faulted, standin: Standin) -> None:
    standin.mode = "ok"
    said = blocked_alone(world, "faulty-tls", KEY, ("check not reachable: [SSL",))
    assert "WRONG_VERSION_NUMBER" in said or "wrong version number" in said


def test_missing_credentials_keep_the_check_pending_and_name_them(
    world: Faulted, standin: Standin
) -> None:
    standin.mode = "ok"
    words = f"check not reachable: missing credentials: environment variable {TOKEN} is not set"
    blocked_alone(world, "faulty-credentials", KEY, (words,))
