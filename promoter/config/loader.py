"""Loads promoter.yaml into ``Config``, reporting every problem with its line and column."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from promoter.config.base import YAML
from promoter.config.models import Config
from promoter.config.secret_refs import unresolvable
from promoter.config.transport import insecure_repositories
from promoter.config.yaml_tree import Location, Path_, YamlProblem, load_tree
from promoter.errors import ConfigError


def _where(loc: Iterable[str | int], marks: dict[Path_, Location]) -> tuple[str, Location | None]:
    parts = tuple(loc)
    dotted = ""
    for part in parts:
        dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else str(part))
    for cut in range(len(parts), -1, -1):
        if parts[:cut] in marks:
            return dotted or "(top level)", marks[parts[:cut]]
    return dotted or "(top level)", None


Report = Callable[[Path_, str], None]
"""Records a problem at a path of the file."""


def _references(data: dict[str, Any], marks: dict[Path_, Location], source: str) -> list[str]:
    """Cross-references pydantic cannot see: names that must exist and be unique."""
    problems: list[str] = []

    def report(loc: Path_, message: str) -> None:
        dotted, pos = _where(loc, marks)
        at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
        problems.append(f"{at}: {dotted}: {message}")

    for loc, message in insecure_repositories(data):
        report(loc, message)
    providers = _names(data, "scmProviders", report)
    repositories = _names(data, "repositories", report)
    _names(data, "promotionStrategies", report)
    for i, repo in enumerate(data.get("repositories") or []):
        if (
            isinstance(repo, dict)
            and isinstance(repo.get("scmProvider"), str)
            and repo["scmProvider"] not in providers
        ):
            report(
                ("repositories", i, "scmProvider"),
                f"no scmProviders entry named {repo['scmProvider']!r}",
            )
    for i, strategy in enumerate(data.get("promotionStrategies") or []):
        if not isinstance(strategy, dict):
            continue
        if (
            isinstance(strategy.get("repository"), str)
            and strategy["repository"] not in repositories
        ):
            report(
                ("promotionStrategies", i, "repository"),
                f"no repositories entry named {strategy['repository']!r}",
            )
        _branches(i, strategy, report)
    return problems


def _names(data: dict[str, Any], section: str, report: Report) -> dict[str, int]:
    """The names in list ``section`` (raw YAML data), each at its index; reports duplicates."""
    seen: dict[str, int] = {}
    items = data.get(section)
    for i, item in enumerate(items if isinstance(items, list) else []):
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str):
            if name in seen:
                report((section, i, "name"), f"duplicate name {name!r}")
            seen[name] = i
    return seen


def _branches(i: int, strategy: dict[str, Any], report: Report) -> None:
    """Reports an environment branch of strategy ``i`` (raw YAML data) that appears twice,
    is another environment's proposed branch, or is the dry branch."""
    branches: set[str] = set()
    envs = strategy.get("environments")
    proposed = _proposed_branches(strategy)
    for j, env in enumerate(envs if isinstance(envs, list) else []):
        branch = env.get("branch") if isinstance(env, dict) else None
        if isinstance(branch, str):
            if branch in branches:
                report(
                    ("promotionStrategies", i, "environments", j, "branch"),
                    f"environment branch {branch!r} appears twice",
                )
            if branch in proposed:
                report(
                    ("promotionStrategies", i, "environments", j, "branch"),
                    f"environment branch {branch!r} is the proposed branch of environment "
                    f"{proposed[branch]!r}: the hydrator writes there",
                )
            if branch == strategy.get("dryBranch", "main"):
                report(
                    ("promotionStrategies", i, "environments", j, "branch"),
                    "an environment branch cannot be the dry branch",
                )
            branches.add(branch)


Checks = Callable[[Config], Iterable[tuple[Path_, str]]]
"""More checks of a valid config, each problem at a path of the file (see ``wiring.preflight``)."""


def config_warnings(config: Config) -> list[str]:
    """What is valid but most likely a mistake (``validate`` prints it, ``serve`` logs it)."""
    if not config.promotion_strategies:
        return ["no promotionStrategies: there is nothing to promote (is this the right file?)"]
    return []


def _proposed_branches(strategy: dict[str, Any]) -> dict[str, str]:
    """``<branch><suffix> -> branch`` for each environment of a strategy (raw YAML data)."""
    suffix = strategy.get("proposedBranchSuffix", "-next")
    envs = strategy.get("environments")
    if not isinstance(suffix, str) or not suffix or not isinstance(envs, list):
        return {}
    branches = [e.get("branch") for e in envs if isinstance(e, dict)]
    return {f"{b}{suffix}": b for b in branches if isinstance(b, str)}


def parse_config(
    text: str,
    *,
    source: str = "promoter.yaml",
    resolve_secrets: bool = False,
    checks: Checks | None = None,
) -> Config:
    """A Config from YAML text; ConfigError lists every problem as ``file:line:col: path: msg``.

    With ``resolve_secrets``, every secret is read too, and one that is missing, unreadable,
    empty or only whitespace is a problem at the line of its reference. ``checks`` run
    last, on a config with no other problem.
    """
    try:
        data, marks = load_tree(text)
    except YamlProblem as exc:
        line, column = exc.where
        raise ConfigError([f"{source}:{line}:{column}: {exc.message}"]) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"{source}:1:1: the file must be a mapping of sections"])
    problems: list[str] = []
    config: Config | None = None
    try:
        config = Config.model_validate(data, context={YAML: True})
    except ValidationError as exc:
        for error in exc.errors():
            dotted, pos = _where(error["loc"], marks)
            at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{at}: {dotted}: {message}")
    problems.extend(_references(data, marks, source))
    valid = config is not None and not problems
    if config is not None and resolve_secrets and valid:
        for loc, message in unresolvable(config):
            dotted, pos = _where(loc, marks)
            at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            problems.append(f"{at}: {dotted}: {message}")
    if config is not None and checks is not None and valid:
        for loc, message in checks(config):
            dotted, pos = _where(loc, marks)
            at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            problems.append(f"{at}: {dotted}: {message}")
    if problems or config is None:
        raise ConfigError(problems)
    return config


def load_config(
    path: str | Path, *, resolve_secrets: bool = False, checks: Checks | None = None
) -> Config:
    """Read and validate a config file; relative stateDir and local paths stay as written.

    ``resolve_secrets`` reads every secret as well (what ``serve`` needs; ``status`` does not).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    return parse_config(text, source=str(path), resolve_secrets=resolve_secrets, checks=checks)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of promoter.yaml."""
    schema = Config.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promoter.yaml"
    return schema
