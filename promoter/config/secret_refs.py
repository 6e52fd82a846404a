"""Finds every secret reference of a configuration, by its path in promoter.yaml."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from promoter.config.secrets import SecretRef
from promoter.errors import ConfigError

YamlPath = tuple[str | int, ...]


def secret_refs(value: object, path: YamlPath = ()) -> Iterator[tuple[YamlPath, SecretRef]]:
    """``(path, ref)`` for each ``SecretRef`` under ``value``, paths in YAML's key names."""
    if isinstance(value, SecretRef):
        yield path, value
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            yield from secret_refs(getattr(value, name), (*path, field.alias or name))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from secret_refs(item, (*path, index))


def unresolvable(value: BaseModel) -> Iterator[tuple[YamlPath, str]]:
    """``(path, problem)`` for each secret that is missing, unreadable or empty."""
    for path, ref in secret_refs(value):
        try:
            ref.resolve()
        except ConfigError as exc:
            for problem in exc.problems:
                yield (*path, "fromEnv" if ref.from_env is not None else "fromFile"), problem
