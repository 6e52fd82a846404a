"""The packages depend on each other in one direction only (docs/architecture.md).

Every import in the source, at module level or inside a function, is checked against
the layer table below; a reverse import fails with the module and line that made it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BASE = {
    "promoter",
    "promoter.models",
    "promoter.errors",
    "promoter.metrics",
    "promoter.logs",
    "promoter.redaction",
    "promoter.activity",
}
"""Shared values, errors and observability: anything may use them; they use nothing (but the
logs hide the secrets the process knows)."""

ALLOWED: dict[str, set[str]] = {
    "promoter": set(),
    "promoter.models": set(),
    "promoter.errors": set(),
    "promoter.metrics": set(),
    "promoter.logs": {"promoter.redaction"},
    "promoter.redaction": set(),
    "promoter.activity": set(),
    "promoter.config": BASE,
    "promoter.engine": BASE | {"promoter.config"},
    "promoter.git": BASE | {"promoter.config"},
    "promoter.state": BASE | {"promoter.config", "promoter.engine", "promoter.git"},
    "promoter.daemon": BASE
    | {"promoter.config", "promoter.engine", "promoter.git", "promoter.state"}
    | {"scm_plugins.protocol"},
    "promoter.http": BASE
    | {"promoter.config", "promoter.engine", "promoter.state", "promoter.daemon"},
    "promoter.cli": BASE
    | {"promoter.config", "promoter.engine", "promoter.git", "promoter.state"}
    | {"promoter.daemon", "promoter.http", "promoter.wiring", "promoter.kube"}
    | {"promoter.notify"},
    "promoter.notify": BASE | {"promoter.config", "promoter.daemon"},
    "promoter.wiring": BASE
    | {"promoter.config", "promoter.daemon", "promoter.http", "promoter.notify"}
    | {"scm_plugins", "webhooks"},
    "promoter.kube": BASE
    | {"promoter.config", "promoter.engine", "promoter.state", "promoter.daemon"}
    | {"promoter.http", "promoter.wiring", "scm_plugins"},
    "scm_plugins": BASE | {"promoter.config", "promoter.git"},
    "webhooks": BASE | {"promoter.config", "promoter.state"},
}
"""For each package (or top-level module): the packages it may import besides itself."""

OURS = ("promoter", "scm_plugins", "webhooks")


def owner(module: str) -> str:
    """The entry of ALLOWED a module belongs to (the longest matching prefix)."""
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        name = ".".join(parts[:size])
        if name in ALLOWED:
            return name
    return module


def imports(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every import of our packages in ``source``."""
    found = []
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{a.name}" for a in node.names]
            # ``from promoter import logs`` imports promoter.logs; keep what is a module.
            found += [
                (node.lineno, n if owner(n) != owner(base) or n in ALLOWED else base) for n in names
            ]
    return [(line, name) for line, name in found if name.split(".")[0] in OURS]


def reverse_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """The imports of ``module`` that break the layer table, as ``module:line imports x``."""
    mine = owner(module)
    allowed = ALLOWED[mine]
    bad = []
    for line, target in imports(source, module, is_package=is_package):
        theirs = owner(target)
        if theirs == mine or theirs in allowed or target in allowed:
            continue
        bad.append(f"{module}:{line} imports {target}")
    return bad


def our_modules() -> list[tuple[str, Path]]:
    """Every module of ours by dotted name (a package by its own name)."""
    found = []
    for top in OURS:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append((".".join(parts), path))
    return found


def test_every_module_imports_only_the_layers_below_it() -> None:
    bad = [
        problem
        for module, path in our_modules()
        for problem in reverse_imports(
            path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
        )
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("promoter.engine.decide", "from promoter.daemon.reconciler import Reconciler\n"),
        ("promoter.engine.decide", "def f():\n    import promoter.git\n"),
        ("promoter.daemon.executor", "from scm_plugins.github import GitHubScm\n"),
        ("promoter.daemon.runtime", "import webhooks\n"),
        ("promoter.http.api", "from promoter.wiring import Daemon\n"),
        ("promoter.config.models", "from promoter.engine import decide\n"),
        ("webhooks.github", "from promoter.daemon import Runtime\n"),
        ("promoter.models", "from promoter.config import Config\n"),
    ],
)
def test_a_reverse_import_is_caught(module: str, source: str) -> None:
    assert reverse_imports(source, module) != []


def test_the_table_names_every_package() -> None:
    """A new top-level module of promoter must be given its place in the table."""
    unplaced = [m for m, _ in our_modules() if owner(m) == "promoter" and m != "promoter"]
    assert unplaced == []
