"""Typed, defensive access to decoded JSON payloads: a wrong shape is a PayloadError, never a crash.

Webhook bodies come from the outside. Every field a handler needs is read through
these helpers, so that a missing field or a field of the wrong type becomes a 400,
and so that strings copied into statuses and logs are bounded in length.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from promoter.models import SHA_RE

JsonObject = dict[str, Any]

_NULL_SHA = re.compile(r"^0+$")
MAX_TEXT = 1024
MAX_URL = 2048


class PayloadError(ValueError):
    """The body is not a payload this receiver understands (answered with 400)."""


def decode_json(raw: bytes | str) -> JsonObject:
    """The JSON object in ``raw``; PayloadError for anything else (not JSON, not an object)."""
    try:
        value = msgspec.json.decode(raw)  # the decoder of decode_fields: they agree
    except (msgspec.MsgspecError, ValueError, RecursionError) as exc:  # also: absurd nesting
        raise PayloadError("body is not JSON") from exc
    if not isinstance(value, dict):
        raise PayloadError("body is not a JSON object")
    return value


_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _decoder(shape: type[Any]) -> msgspec.json.Decoder[Any]:
    decoder = _DECODERS.get(shape)
    if decoder is None:
        decoder = _DECODERS[shape] = msgspec.json.Decoder(shape)
    return decoder


def decode_fields(raw: bytes | str, shape: type[Any]) -> JsonObject:
    """The JSON object in ``raw`` as ``decode_json`` reads it, keeping only the fields of
    ``shape`` (a TypedDict of ``webhooks.providers.shapes``), which is what costs less.

    Whatever the shape does not fit (a field of another type, not JSON, not UTF-8) is
    decoded whole by ``decode_json`` instead, so that the answer is the same as without
    the shape.
    """
    if isinstance(raw, bytes) and not raw.isascii():
        try:
            raw.decode("utf-8")  # skipped strings are not checked: decode_json refuses them
        except UnicodeDecodeError:
            return decode_json(raw)
    try:
        value: JsonObject = _decoder(shape).decode(raw)
    except (msgspec.MsgspecError, ValueError):
        return decode_json(raw)
    return value


def obj(data: JsonObject, name: str) -> JsonObject:
    """A required nested object."""
    value = data.get(name)
    if not isinstance(value, dict):
        raise PayloadError(f"{name} must be an object")
    return value


def opt_obj(data: JsonObject, name: str) -> JsonObject:
    """An optional nested object; empty when absent or null."""
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PayloadError(f"{name} must be an object")
    return value


def text(data: JsonObject, name: str) -> str:
    """A required, non-empty string."""
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{name} must be a non-empty string")
    return value


def opt_text(data: JsonObject, name: str, *, limit: int = MAX_TEXT) -> str:
    """An optional string, cut to ``limit`` characters; empty when absent or null."""
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PayloadError(f"{name} must be a string")
    return value[:limit]


def opt_int(data: JsonObject, name: str) -> int | None:
    """An optional integer (booleans refused)."""
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(f"{name} must be an integer")
    return value


def opt_bool(data: JsonObject, name: str) -> bool:
    value = data.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise PayloadError(f"{name} must be a boolean")
    return value


def sha(data: JsonObject, name: str) -> str:
    """A required full commit SHA, lower case."""
    value = data.get(name)
    if not isinstance(value, str) or not SHA_RE.match(value.lower()):
        raise PayloadError(f"{name} must be a full commit SHA")
    return value.lower()


def opt_sha(data: JsonObject, name: str) -> str | None:
    """An optional commit SHA; None when absent, null, or all zeros (a created/deleted ref)."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not SHA_RE.match(value.lower()):
        raise PayloadError(f"{name} must be a full commit SHA")
    return None if _NULL_SHA.match(value) else value.lower()


def timestamp(*values: Any) -> datetime:
    """The first parseable timestamp among ``values`` (ISO 8601 or GitLab's ``... UTC``), else now.

    Naive times are taken as UTC, so that every result compares with every other.
    """
    for value in values:
        if not isinstance(value, str) or not value or len(value) > 64:
            continue
        candidate = value.strip()
        if candidate.endswith(" UTC"):
            candidate = candidate[:-4] + "+00:00"
        try:
            parsed = datetime.fromisoformat(candidate)
        except (ValueError, OverflowError):
            continue
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return datetime.now(UTC)
