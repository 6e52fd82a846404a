"""Each package names its public API in ``__all__``, and the other packages keep to it.

Every package declares ``__all__``, every name in it exists, and what a module imports
from another package is in that package's ``__all__`` (or is one of its modules). The
packages with rooms are stricter (``THROUGH_PACKAGE``): outside the package and its own
tests (which test its rooms and modules one by one), the engine, the daemon, the HTTP
layer and Kubernetes mode are imported through their package alone. The order of ``__all__`` is
ruff's (RUF022).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("promoter", "scm_plugins", "webhooks")
SCANNED = (*SOURCES, "tests", "bench")
ENGINE = "promoter.engine"
ENGINE_RULE_TESTS = ("tests/engine/",)
"""The engine's own tests, which may import its modules."""
HTTP = "promoter.http"
HTTP_TESTS = ("tests/http/",)
"""The HTTP layer's own tests, which may import its rooms and modules."""
KUBE = "promoter.kube"
KUBE_TESTS = ("tests/kube/",)
"""Kubernetes mode's own tests, which may import its rooms and modules."""
DAEMON = "promoter.daemon"
DAEMON_TESTS = ("tests/daemon/",)
"""The daemon's own tests, which may import its rooms and modules."""
THROUGH_PACKAGE = {
    ENGINE: ENGINE_RULE_TESTS,
    DAEMON: DAEMON_TESTS,
    HTTP: HTTP_TESTS,
    KUBE: KUBE_TESTS,
}
"""The packages imported through the package alone, and the tests that may reach in."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PACKAGES = sorted(
    module_name(init) for top in SOURCES for init in (ROOT / top).rglob("__init__.py")
)


def is_module(name: str) -> bool:
    """Whether ``name`` is one of our modules or packages."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports() -> Iterator[tuple[str, str, int, str, list[str]]]:
    """``(file, importing module, line, imported module, names)`` for every import of ours.

    ``import a.b`` gives ``("a.b", [])``; ``from a import b, c`` gives ``("a", ["b", "c"])``.
    """
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            importer = module_name(path)
            package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
            file = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        yield file, importer, node.lineno, alias.name, []
                elif isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                    if node.level:
                        base = package.split(".")[: len(package.split(".")) - node.level + 1]
                        module = ".".join([*base, module] if module else base)
                    yield file, importer, node.lineno, module, [a.name for a in node.names]


def declared_all(package: str) -> list[str] | None:
    """The literal ``__all__`` of ``package``'s ``__init__.py``, None if it has none."""
    init = ROOT.joinpath(*package.split("."), "__init__.py")
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            value: list[str] = ast.literal_eval(node.value)
            return value
    return None


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_every_package_declares_its_public_api() -> None:
    assert [package for package in PACKAGES if declared_all(package) is None] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_a_package_exports_exists_once(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", [])
    assert [name for name in names if not hasattr(module, name)] == []
    assert sorted(set(names)) == sorted(names)


def test_what_a_package_gives_others_is_in_its_public_api() -> None:
    outside = []
    for path, importer, line, module, names in imports():
        if module not in PACKAGES or within(importer, module):
            continue
        public = declared_all(module) or []
        strict = THROUGH_PACKAGE.get(module)
        modules_allowed = strict is None or path.startswith(strict)
        for name in names:
            if name in public or (modules_allowed and is_module(f"{module}.{name}")):
                continue
            outside.append(f"{path}:{line} imports {name} from {module}")
    assert outside == []


@pytest.mark.parametrize("package", sorted(THROUGH_PACKAGE))
def test_a_package_with_rooms_is_imported_through_its_package_only(package: str) -> None:
    through_modules = [
        f"{path}:{line} imports {module}"
        for path, importer, line, module, _ in imports()
        if module.startswith(package + ".")
        and not within(importer, package)
        and not path.startswith(THROUGH_PACKAGE[package])
    ]
    assert through_modules == []
