"""The conformance kit and the ``promoter plugins`` commands, on plugins in two languages."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from promoter.cli import main
from promoter.config import ExternalPlugin, Repository
from scm_plugins.external.conformance.kit import run_conformance
from scm_plugins.external.messages import METHODS
from scm_plugins.external.scratch import Scratch, init_bare

from .scripted import write_plugin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
NODE = shutil.which("node")


def scratch(tmp_path: Path) -> Scratch:
    url = str(init_bare(tmp_path / "scratch.git"))
    return Scratch(Repository(name="scratch", url=url, scm_provider="conformance"), url)


def test_the_local_scm_run_out_of_process_passes_the_conformance_kit(tmp_path: Path) -> None:
    plugin = ExternalPlugin(command=[sys.executable, "-m", "scm_plugins.local", "--plugin"])
    report = run_conformance(plugin, scratch(tmp_path), state_dir=str(tmp_path / "state"))
    report.assert_passed()
    assert [c.name for c in report.checks][-2:] == ["slow call times out", "recovers"]


@pytest.mark.skipif(NODE is None, reason="the Node.js example needs node")
def test_the_node_example_plugin_passes_the_conformance_kit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plugins", "check", "nodelocal", "--dir", str(EXAMPLES)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "conformance of nodelocal (promoter.scm/v1.1)" in out and "16/16 passed" in out
    assert "pass  events" in out and "pass  own writes known in events" in out
    assert "n/a   outage answered unavailable" in out  # a local SCM: no network to lose


def test_a_plugin_that_breaks_the_contract_fails_the_kit_with_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plugin(tmp_path, "liar", version="promoter.scm/v1")  # answers every call with 429
    code = main(["plugins", "check", "liar", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "pass  handshake" in out and "FAIL  git credentials" in out and "skip  merge" in out


def flawed(flaw: str) -> ExternalPlugin:
    return ExternalPlugin(
        command=[sys.executable, str(Path(__file__).with_name("flawed_local.py")), flaw]
    )


def test_the_kit_fails_a_plugin_that_answers_a_far_id_under_another(tmp_path: Path) -> None:
    report = run_conformance(flawed("int32-ids"), scratch(tmp_path), state_dir=str(tmp_path / "s"))
    checks = {c.name: c for c in report.checks}
    assert not report.ok
    assert checks["ids answered as sent"].passed is False
    assert "which no call waits for" in checks["ids answered as sent"].detail
    assert [c.name for c in report.checks if c.passed is False] == ["ids answered as sent"]


@pytest.mark.parametrize(
    ("flaw", "said"),
    [
        ("outage-internal", "answered PluginError while its SCM was unreachable"),
        ("outage-exits", "exited while its SCM was unreachable"),
    ],
)
def test_the_kit_fails_a_plugin_that_takes_its_scm_being_down_for_anything_but_unavailable(
    tmp_path: Path, flaw: str, said: str
) -> None:
    report = run_conformance(flawed(flaw), scratch(tmp_path), state_dir=str(tmp_path / "s"))
    checks = {c.name: c for c in report.checks}
    assert not report.ok
    assert checks["outage answered unavailable"].passed is False
    assert said in checks["outage answered unavailable"].detail
    assert [c.name for c in report.checks if c.passed is False] == ["outage answered unavailable"]


def test_plugins_list_shows_every_plugin_with_its_version_and_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plugin(tmp_path, "scripted", version="promoter.scm/v1")
    write_plugin(tmp_path, "future", version="promoter.scm/v9")
    dirs = ["--dir", str(tmp_path)] + (["--dir", str(EXAMPLES)] if NODE else [])
    assert main(["plugins", "list", *dirs]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["scripted"].split()[1:3] == ["9.9.9", "promoter.scm/v1"]
    assert "promoter.scm/v9" in rows["future"] and "?" in rows["future"]
    if NODE:
        assert rows["nodelocal"].split()[1:3] == ["0.2.0", "promoter.scm/v1.1"]


def test_the_protocol_schema_has_params_and_result_of_every_method(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "--plugin-protocol"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "promoter.scm/v1.1"
    assert set(schema["methods"]) == set(METHODS)
    merge = schema["methods"]["pullRequests/merge"]["params"]
    assert set(merge["required"]) == {"repository", "number", "expectedHeadSha", "message"}
    assert -32003 in schema["envelopes"]["error"]["properties"]["code"]["enum"]
    assert set(schema["notifications"]) == {
        "events/refMoved",
        "events/statusChanged",
        "events/pullRequestChanged",
    }
    moved = schema["notifications"]["events/refMoved"]["params"]
    assert set(moved["required"]) == {"repository", "ref"}
