"""The packages depend on each other in one direction only (docs/architecture.md).

The layers are import-linter contracts (``[tool.importlinter]`` in pyproject.toml), run by
``make test`` as ``lint-imports``. These tests prove that the contracts bite: each breaks
when an import it forbids is planted in the import graph, the one hidden inside a function
is caught by ``lint-imports`` itself, and no import cycle joins two modules of ours.
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract
from importlinter.contracts.protected import ProtectedContract

ROOT = Path(__file__).resolve().parent.parent

CONTRACT_TYPES = {
    kind.type_name: kind
    for kind in (
        AcyclicSiblingsContract,
        ForbiddenContract,
        IndependenceContract,
        LayersContract,
        ProtectedContract,
    )
}


@functools.cache
def configuration() -> dict[str, Any]:
    return read_configuration(str(ROOT / "pyproject.toml"))


@functools.cache
def import_graph() -> grimp.ImportGraph:
    session = configuration()["session_options"]
    return grimp.build_graph(
        *session["root_packages"],
        include_external_packages=session["include_external_packages"],
        cache_dir=None,
    )


def broken_contracts(*planted: tuple[str, str], modules: tuple[str, ...] = ()) -> list[str]:
    """The ids of the contracts that the source breaks with the ``planted`` imports (and
    the new ``modules``) added."""
    graph = copy.deepcopy(import_graph())
    for module in modules:
        graph.add_module(module)
    for importer, imported in planted:
        assert {importer, imported} <= graph.modules, "plant an import between real modules"
        graph.add_import(
            importer=importer, imported=imported, line_number=1, line_contents="planted"
        )
    session = configuration()["session_options"]
    broken = []
    for options in configuration()["contracts_options"]:
        contract = CONTRACT_TYPES[options["type"]](
            name=options["name"], session_options=session, contract_options=options
        )
        if not contract.check(copy.deepcopy(graph), verbose=False).kept:
            broken.append(options["id"])
    return broken


REVERSE_IMPORTS = [
    ("promoter.engine.decide", "promoter.daemon.loop.reconciler", "layers"),
    ("promoter.config.models", "promoter.engine", "layers"),
    ("promoter.models", "promoter.config", "layers"),
    ("promoter.daemon.reading.freezes", "promoter.daemon.loop.scheduler", "daemon-rooms"),
    ("promoter.daemon.acting.executor", "promoter.daemon.operations.results", "daemon-rooms"),
    ("promoter.daemon.memory.settled", "promoter.daemon.checks.lanes", "daemon-rooms"),
    ("promoter.wiring", "promoter.kube", "layers"),
    ("promoter.engine.decide", "promoter.git", "layers"),
    ("promoter.engine.core.snapshot", "promoter.engine.gates.gates", "engine-rooms"),
    ("promoter.engine.reverts.revert", "promoter.engine.promotion.queue", "engine-rooms"),
    ("promoter.engine.decide", "promoter.engine.operations", "engine-rooms"),
    ("promoter.http.api", "promoter.notify", "layers"),
    ("promoter.http.access.roles", "promoter.http.api.writes", "http-rooms"),
    ("promoter.http.api.routes", "promoter.http.pages.status_page", "http-rooms"),
    ("promoter", "promoter.config", "root"),
    ("promoter.models", "promoter.redaction", "shared"),
    ("promoter.logs", "promoter", "shared-root"),
    ("promoter.http.api", "promoter.git.mirror", "http"),
    ("promoter.notify.notifier", "promoter.state", "notify"),
    ("promoter.wiring", "promoter.engine", "wiring"),
    ("promoter.kube.controller", "promoter.git", "kube"),
    ("promoter.kube.shards.routes", "promoter.kube.controller", "kube-rooms"),
    ("promoter.kube.client.api", "promoter.kube.resources.specs", "kube-rooms"),
    ("scm_plugins.github.plugin", "promoter.state", "plugins-below"),
    ("promoter.daemon.acting.executor", "scm_plugins.github", "plugins-above"),
    ("promoter.cli.main", "scm_plugins.registry", "plugins-above"),
    ("scm_plugins.gitlab.plugin", "scm_plugins.github.client", "plugins-independent"),
    ("scm_plugins.local.plugin", "scm_plugins.external.server", "plugins-independent"),
    (
        "scm_plugins.bitbucket_cloud.pulls",
        "scm_plugins.bitbucket_datacenter.pulls",
        "plugins-independent",
    ),
    ("scm_plugins.bitbucket.rest", "scm_plugins.bitbucket_cloud.auth", "bitbucket-shared"),
    ("webhooks.providers.github", "promoter.daemon", "webhooks-below"),
    ("promoter.daemon.runtime", "webhooks", "webhooks-above"),
    ("webhooks.providers.forgejo", "webhooks.providers.github", "receivers-independent"),
    (
        "webhooks.providers.bitbucket_cloud",
        "webhooks.providers.bitbucket_datacenter",
        "receivers-independent",
    ),
    ("promoter.engine.gates.gates", "promoter.state.ledger", "engine-pure"),
    ("promoter.engine.decide", "subprocess", "engine-no-io-libraries"),
    ("promoter.engine.gates.windows", "git", "engine-no-io-libraries"),
    ("promoter.engine.reverts.dora", "logging", "engine-no-io-libraries"),
    ("promoter.git.process.runner", "promoter.git.identity", "acyclic"),
    ("promoter.daemon.reading.reader", "promoter.daemon.loop.reconciler", "acyclic"),
]


def test_the_source_keeps_every_contract() -> None:
    assert broken_contracts() == []


@pytest.mark.parametrize(("importer", "imported", "contract"), REVERSE_IMPORTS)
def test_a_forbidden_import_breaks_its_contract(
    importer: str, imported: str, contract: str
) -> None:
    assert contract in broken_contracts((importer, imported))


def test_every_contract_is_seen_to_bite() -> None:
    declared = {options["id"] for options in configuration()["contracts_options"]}
    assert declared == {contract for _, _, contract in REVERSE_IMPORTS}


def test_a_module_of_the_daemon_outside_its_rooms_breaks_the_rooms_contract() -> None:
    """A new module of ``promoter.daemon`` must be given its room (the contract is exhaustive)."""
    assert "daemon-rooms" in broken_contracts(modules=("promoter.daemon.stray",))


def test_every_package_of_promoter_has_its_place_in_the_layers() -> None:
    """A new top-level module of promoter must be given its place in the layers contract."""
    layers = next(c for c in configuration()["contracts_options"] if c["id"] == "layers")
    placed = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    assert import_graph().find_children("promoter") - placed == set()


def test_no_import_cycle_joins_two_modules_of_ours() -> None:
    """Imports inside functions and of a package's ``__init__`` count too."""
    graph = import_graph()
    ours = sorted(m for m in graph.modules if not graph.is_module_squashed(m))
    cycles = []
    for module in ours:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.append(f"{module} -> {' -> '.join(back)}")
    assert cycles == []


def test_lint_imports_catches_a_cycle_hidden_inside_a_function(tmp_path: Path) -> None:
    for top in configuration()["session_options"]["root_packages"]:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    runner = tmp_path / "promoter" / "git" / "process" / "runner.py"
    runner.write_text(
        runner.read_text(encoding="utf-8")
        + "\n\ndef _committer() -> dict[str, str]:\n"
        + "    from promoter.git.identity import identity_env\n\n"
        + "    return identity_env()\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "No cycles are allowed in promoter.git" in done.stdout
    assert ".process -> .identity" in done.stdout
