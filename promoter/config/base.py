"""The base of every configuration model: camelCase keys in YAML, unknown keys refused,
and YAML's plain values taken as written (an empty section is empty, ``true`` is no number)."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel


def _kinds(annotation: Any) -> set[Any]:
    """The plain types a field accepts: ``int | None`` gives ``{int, NoneType}``."""
    if get_origin(annotation) in (Union, types.UnionType):
        return {kind for arg in get_args(annotation) for kind in _kinds(arg)}
    origin = get_origin(annotation)
    return {origin if origin is not None else annotation}


YAML = "yaml"
"""The validation context key the loader sets: the data was written by a person in YAML
(other callers, e.g. Kubernetes objects, pass None for absent optional sections)."""


class Spec(BaseModel):
    """Base of configuration models: camelCase keys, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    @field_validator("*", mode="before")
    @classmethod
    def _as_written(cls, value: Any, info: ValidationInfo) -> Any:
        """``local:`` or ``daemon:`` with nothing after is an empty section (YAML reads it as
        null); ``port: true`` is refused rather than read as 1, ``autoMerge: 1`` as true."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or not (info.context or {}).get(YAML):
            return value
        kinds = _kinds(field.annotation)
        if value is None:
            if any(isinstance(k, type) and issubclass(k, BaseModel) for k in kinds):
                return {}
            if list in kinds:
                return []
        if isinstance(value, bool) and bool not in kinds and kinds & {int, float}:
            raise ValueError(f"a number, not {str(value).lower()}")
        if bool in kinds and not isinstance(value, bool) and value is not None:
            raise ValueError("true or false")
        return value
