"""Loads promoter.yaml into ``Config``, reporting every problem with its line and column."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from promoter.config.models import Config
from promoter.config.secret_refs import unresolvable
from promoter.config.transport import insecure_repositories
from promoter.errors import ConfigError

Location = tuple[int, int]
Path_ = tuple[str | int, ...]


def _construct(node: yaml.Node, path: Path_, marks: dict[Path_, Location]) -> Any:
    """Plain Python data from a YAML node, recording each value's position by path."""
    marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = yaml.safe_load(yaml.serialize(key_node))
            marks[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _construct(value_node, (*path, key), marks)
            marks[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, (*path, i), marks) for i, item in enumerate(node.value)]
    return yaml.safe_load(yaml.serialize(node))


def _where(loc: Iterable[str | int], marks: dict[Path_, Location]) -> tuple[str, Location | None]:
    parts = tuple(loc)
    dotted = ""
    for part in parts:
        dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else str(part))
    for cut in range(len(parts), -1, -1):
        if parts[:cut] in marks:
            return dotted or "(top level)", marks[parts[:cut]]
    return dotted or "(top level)", None


def _references(data: dict[str, Any], marks: dict[Path_, Location], source: str) -> list[str]:
    """Cross-references pydantic cannot see: names that must exist and be unique."""
    problems: list[str] = []

    def report(loc: Path_, message: str) -> None:
        dotted, pos = _where(loc, marks)
        at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
        problems.append(f"{at}: {dotted}: {message}")

    def names(section: str) -> dict[str, int]:
        seen: dict[str, int] = {}
        items = data.get(section)
        for i, item in enumerate(items if isinstance(items, list) else []):
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str):
                if name in seen:
                    report((section, i, "name"), f"duplicate name {name!r}")
                seen[name] = i
        return seen

    for loc, message in insecure_repositories(data):
        report(loc, message)
    providers = names("scmProviders")
    repositories = names("repositories")
    names("promotionStrategies")
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
        branches: set[str] = set()
        envs = strategy.get("environments")
        for j, env in enumerate(envs if isinstance(envs, list) else []):
            branch = env.get("branch") if isinstance(env, dict) else None
            if isinstance(branch, str):
                if branch in branches:
                    report(
                        ("promotionStrategies", i, "environments", j, "branch"),
                        f"environment branch {branch!r} appears twice",
                    )
                if branch == strategy.get("dryBranch", "main"):
                    report(
                        ("promotionStrategies", i, "environments", j, "branch"),
                        "an environment branch cannot be the dry branch",
                    )
                branches.add(branch)
    return problems


def parse_config(
    text: str, *, source: str = "promoter.yaml", resolve_secrets: bool = False
) -> Config:
    """A Config from YAML text; ConfigError lists every problem as ``file:line:col: path: msg``.

    With ``resolve_secrets``, every secret is read too, and one that is missing, unreadable,
    empty or only whitespace is a problem at the line of its reference.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError([f"{at}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from exc
    marks: dict[Path_, Location] = {}
    data = _construct(node, (), marks) if node is not None else {}
    if not isinstance(data, dict):
        raise ConfigError([f"{source}:1:1: the file must be a mapping of sections"])
    problems: list[str] = []
    config: Config | None = None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            dotted, pos = _where(error["loc"], marks)
            at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{at}: {dotted}: {message}")
    problems.extend(_references(data, marks, source))
    if config is not None and resolve_secrets and not problems:
        for loc, message in unresolvable(config):
            dotted, pos = _where(loc, marks)
            at = f"{source}:{pos[0]}:{pos[1]}" if pos else source
            problems.append(f"{at}: {dotted}: {message}")
    if problems or config is None:
        raise ConfigError(problems)
    return config


def load_config(path: str | Path, *, resolve_secrets: bool = False) -> Config:
    """Read and validate a config file; relative stateDir and local paths stay as written.

    ``resolve_secrets`` reads every secret as well (what ``serve`` needs; ``status`` does not).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    return parse_config(text, source=str(path), resolve_secrets=resolve_secrets)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of promoter.yaml."""
    schema = Config.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promoter.yaml"
    return schema
