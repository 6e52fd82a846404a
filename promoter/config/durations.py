"""Human durations for the configuration: ``30s``, ``2m``, ``1h30m`` or a number of seconds."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any) -> float:
    """Seconds from ``"1h30m"``, ``"45s"``, ``"250ms"`` or a non-negative number."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '30s', '2m', '1h'")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if not isinstance(value, str):
        raise ValueError("a duration is a number of seconds or a string like '30s', '2m', '1h'")
    text = value.strip().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"{value!r} is not a duration; write it like '30s', '2m', '1h30m'")
    return total


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(lambda v: v, return_type=float),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d))+$"},
            ],
            "description": "seconds, or a string like '30s', '2m', '1h30m'",
        }
    ),
]
"""Seconds as a float, written in the config as a number or a string like ``2m``."""
