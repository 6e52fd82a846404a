"""JSON Schemas of every ``promoter.scm/v1.1`` message (``promoter schema --plugin-protocol``).

Generated from the pydantic models in ``messages`` so that they cannot drift from
what the host and the Python server validate.
"""

from __future__ import annotations

from typing import Any

from scm_plugins.external import errors as e
from scm_plugins.external.events import EVENTS
from scm_plugins.external.messages import METHODS
from scm_plugins.external.wire import PROTOCOL

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _envelopes() -> dict[str, Any]:
    ident = {"type": "integer", "minimum": 1}
    error = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "integer", "enum": sorted(e.TYPES)},
            "message": {"type": "string"},
            "data": {
                "type": "object",
                "properties": {
                    "type": {"enum": [kind for kind, _ in e.TYPES.values()]},
                    "temporary": {"type": "boolean"},
                    "retryAfter": {"type": "number", "minimum": 0},
                },
            },
        },
    }
    return {
        "request": {
            "type": "object",
            "required": ["jsonrpc", "id", "method"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": ident,
                "method": {"enum": sorted(METHODS)},
                "params": {"type": "object"},
            },
        },
        "response": {
            "type": "object",
            "required": ["jsonrpc", "id"],
            "properties": {"jsonrpc": {"const": "2.0"}, "id": ident, "result": {}, "error": error},
            "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
        },
        "error": error,
        "notification": {
            "type": "object",
            "required": ["jsonrpc", "method", "params"],
            "not": {"required": ["id"]},
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "method": {"enum": sorted(EVENTS)},
                "params": {"type": "object"},
            },
        },
    }


def protocol_schema() -> dict[str, Any]:
    """One document: the envelopes, and per method the schema of its params and its result."""
    methods: dict[str, Any] = {}
    for name, (params, result) in METHODS.items():
        methods[name] = {
            "params": {"$schema": DRAFT, **params.model_json_schema(by_alias=True)},
            "result": {"$schema": DRAFT, **result.json_schema(by_alias=True)},
        }
    notifications = {
        name: {"params": {"$schema": DRAFT, **model.model_json_schema(by_alias=True)}}
        for name, model in EVENTS.items()
    }
    return {
        "$schema": DRAFT,
        "title": PROTOCOL,
        "description": "JSON-RPC 2.0 over the plugin's stdin/stdout, one message per line.",
        "envelopes": _envelopes(),
        "methods": methods,
        "notifications": notifications,
    }
