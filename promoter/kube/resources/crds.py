"""CustomResourceDefinitions generated from the pydantic models (``promoter crds``).

The OpenAPI schemas are pydantic's JSON Schemas made *structural*, as Kubernetes
requires: references inlined, ``Optional`` as ``nullable``, durations as
int-or-string, free-form maps and unions of different types as
``x-kubernetes-preserve-unknown-fields`` (the models validate those when read).
``manifests/crds/`` holds the output; a test fails when it is stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from promoter.kube.client.group import GROUP, VERSION
from promoter.kube.resources.specs import (
    CommitStatusSpec,
    CommitStatusStatus,
    GitRepositorySpec,
    PromotionStrategySpec,
    PromotionStrategyStatus,
    ReadyStatus,
    ScmProviderSpec,
)

_READY = '.status.conditions[?(@.type=="Ready")].status'
_KEEP: tuple[str, ...] = ("type", "description", "enum", "pattern", "minimum", "maximum", "format")
_KEEP += ("minLength", "maxLength", "minItems", "maxItems", "exclusiveMinimum")


@dataclass(frozen=True)
class Kind:
    """One custom resource: its names, models and printer columns (name, type, JSONPath)."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[tuple[str, str, str], ...]

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


KINDS = (
    Kind(
        "PromotionStrategy",
        "promotionstrategies",
        ("ps",),
        PromotionStrategySpec,
        PromotionStrategyStatus,
        (("Repository", "string", ".spec.gitRepositoryRef.name"), ("Ready", "string", _READY)),
    ),
    Kind(
        "GitRepository",
        "gitrepositories",
        ("gitrepo",),
        GitRepositorySpec,
        ReadyStatus,
        (("URL", "string", ".spec.url"), ("Ready", "string", _READY)),
    ),
    Kind(
        "ScmProvider",
        "scmproviders",
        (),
        ScmProviderSpec,
        ReadyStatus,
        (("Ready", "string", _READY),),
    ),
    Kind(
        "CommitStatus",
        "commitstatuses",
        (),
        CommitStatusSpec,
        CommitStatusStatus,
        (
            ("Key", "string", ".spec.key"),
            ("Sha", "string", ".spec.sha"),
            ("Phase", "string", ".spec.phase"),
            ("Mirrored", "string", ".status.mirroredPhase"),
        ),
    ),
)


def structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A Kubernetes structural schema from a pydantic JSON Schema node."""
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return structural(merged, defs)
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants is not None:
        rest = [v for v in variants if v.get("type") != "null"]
        nullable = len(rest) < len(variants)
        types = {v.get("type") for v in rest}
        if len(rest) == 1:
            node = structural({**rest[0], **_outer(schema)}, defs)
        elif types == {"number", "string"}:  # a Duration: 30 or "30s"
            node = {"x-kubernetes-int-or-string": True, **_outer(schema)}
        elif types == {"object"}:  # a union of objects: every property, none required
            fields: dict[str, Any] = {}
            for variant in rest:
                fields.update(structural(variant, defs).get("properties", {}))
            node = {"type": "object", "properties": fields, **_outer(schema)}
        else:  # e.g. a string or a list of strings: the models validate it
            node = {"x-kubernetes-preserve-unknown-fields": True, **_outer(schema)}
        if nullable:
            node["nullable"] = True
        return node
    out = {k: schema[k] for k in _KEEP if k in schema}
    if "const" in schema:
        out["enum"] = [schema["const"]]
    kind = schema.get("type")
    if kind is None and "properties" not in schema:  # Any
        out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    if kind == "object" or "properties" in schema:
        out["type"] = "object"
        properties = schema.get("properties")
        if properties:
            out["properties"] = {k: structural(v, defs) for k, v in properties.items()}
            if schema.get("required"):
                out["required"] = list(schema["required"])
        else:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                out["additionalProperties"] = structural(extra, defs)
            else:
                out["x-kubernetes-preserve-unknown-fields"] = True
    elif kind == "array":
        out["items"] = structural(schema.get("items", {}), defs)
    return out


def _outer(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k in ("description",)}


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return structural(raw, raw.get("$defs", {}))


def crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    spec = _model_schema(kind.spec)
    spec.pop("description", None)
    schema = {
        "type": "object",
        "description": (kind.spec.__doc__ or kind.kind).strip().splitlines()[0],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": _model_schema(kind.status),
        },
        "required": ["spec"],
    }
    columns = [
        {"name": name, "type": type_, "jsonPath": path} for name, type_, path in kind.columns
    ]
    columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


HEADER = "# Generated by `promoter crds` from the pydantic models; never edit by hand.\n"


def rendered() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    return {
        f"{kind.crd_name}.yaml": HEADER + yaml.safe_dump(crd(kind), sort_keys=False, width=100)
        for kind in KINDS
    }


def write(directory: Path) -> list[Path]:
    """Write every CRD into ``directory`` (created if missing); return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
