"""A plugin that misbehaves when the promoter publishes a gate's result through it (hangs,
answers slowly, fails as its SCM did, writes garbage, dies): the result is never taken for
published, the gate waits with the plugin's words in the API, its environment does not
merge, and every other environment and strategy merges as usual."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.errors import ScmUnavailable
from promoter.models import CommitStatus
from tests.faults.harness import (
    STAGING,
    TIMEOUT,
    Faulted,
    Faulty,
    faulted,
    reason_says,
    staging_pr,
)
from tests.faults.standins import Answer, Standin
from tests.support import wait_for

KEY = "promoter/smoke"
PLUGIN = [sys.executable, str(Path(__file__).with_name("faulty_plugin.py"))]
NO_ANSWER = ("not on the SCM (no answer within 1s)", "not on the SCM (no answer to 2 earlier")
WORDS = {
    "hang": NO_ANSWER,
    "slow": NO_ANSWER,
    "5xx": ("the SCM answered 503: upstream overloaded): check says success",),
    "garbage": ("wrote a line that is not a protocol message while commitStatuses/set",),
    "reset": (
        "exited during commitStatuses/set): check says success",
        "the SCM reset the connection): check says success",
    ),
    "tls": ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed): check says success",),
    "credentials": ("the SCM refused the token: 401 Bad credentials): check says success",),
}


def verdict(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
    return 200, "application/json", json.dumps({"verdict": "success"}).encode()


def on_the_scm(world: Faulted, sha: str) -> dict[str, CommitStatus] | None:
    """The checks of ``sha`` on the plugin's SCM, once it answers (it restarts after dying)."""
    try:
        return world.checks("faulty", sha) or None
    except ScmUnavailable:
        return None


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plugin-control") / "mode"
    path.write_text("ok")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, control: Path) -> Iterator[Faulted]:
    root = tmp_path_factory.mktemp("plugin")
    providers = f"""
  - name: faultyscm
    plugin: {{command: {PLUGIN}, settings: {{control: '{control}'}}, timeout: 5s}}
"""
    with Standin(verdict) as check:
        gate = (
            f"gates: [{{name: smoke, http: {{url: '{check.url}/verify/{{sha}}',"
            f" expression: verdict, interval: 0.2s, timeout: {TIMEOUT}}}}}]"
        )
        faulty = [
            Faulty("faulty", staging=gate, provider="faultyscm", repository="pollInterval: 0.05s")
        ]
        with faulted(root, faulty, providers) as world:
            yield world


@pytest.mark.parametrize("mode", list(WORDS))
def test_a_result_the_plugin_does_not_take_keeps_the_gate_pending_in_its_words(
    world: Faulted, control: Path, mode: str
) -> None:
    control.write_text(mode)
    if mode == "reset":  # the strategy's own SCM dies on each try: its dev waits on it too
        change, _ = world.promote_dev("faulty")
    else:
        change, _ = world.assert_usual_speed("faulty")
    head = staging_pr(world, "faulty", change)
    reason = reason_says(world, "faulty", STAGING, WORDS[mode])
    assert KEY in reason and "check says success" in reason

    shown = {s["key"]: s for s in world.view("faulty", STAGING)["proposed"]["commitStatuses"]}
    assert shown[KEY]["phase"] == "pending"
    on_scm = wait_for(lambda: on_the_scm(world, head), what="the SCM's checks", timeout=30)
    assert KEY not in on_scm or on_scm[KEY].phase.value != "success"
    world.assert_usual_speed("calm")
    world.stuck_in_staging("faulty", change)


def test_the_result_is_published_once_the_plugin_takes_it(world: Faulted, control: Path) -> None:
    control.write_text("ok")
    change, _ = world.assert_usual_speed("faulty")
    staging_pr(world, "faulty", change)
    wait_for(lambda: world.active_dry("faulty", STAGING) == change, what="staging merged")
