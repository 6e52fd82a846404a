"""The base of every configuration model: camelCase keys in YAML, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Spec(BaseModel):
    """Base of configuration models: camelCase keys, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )
