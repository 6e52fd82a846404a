"""The views kept for every strategy, made smaller: pydantic's field-name sets shared.

pydantic gives every model instance a set of the names of the fields it was given
(``model_fields_set``): 200 bytes for a few names, 2 KB for twenty. A strategy's view
holds some sixty models (its snapshot and decision), and their sets were a third of
its memory. Instances built alike hold equal sets, so a view's frozen models are made
to share one set per distinct set of names. The shared set copies itself as a plain
set (``model_copy`` copies the set, then adds the updated names to the copy), so
copying, updating, comparing and dumping a model behave as before. Models that are
not frozen keep their own set: an assignment adds to it.

The walk goes down only the fields whose type can hold a model (worked out once per
model class from its annotations): a view's strings, SHAs, times and tuples of names
are not visited one by one.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

LIMIT = 4096
"""Distinct sets of names shared at most (a few per model class in practice)."""


_NESTED = (BaseModel, tuple, list, frozenset)


def may_hold_models(annotation: Any) -> bool:
    """Whether a field of this type can hold a model or a container the walk goes down,
    at any depth. What cannot be told (``Any``, a type variable) can."""
    if annotation is None or annotation is type(None):
        return False
    if annotation is Any or annotation is object:
        return True
    if isinstance(annotation, type):
        return issubclass(annotation, _NESTED)  # a bare tuple or list: items unknown
    origin = typing.get_origin(annotation)
    if origin is None:
        return True
    if origin is typing.Literal:
        return False
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return may_hold_models(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(may_hold_models(a) for a in args)
    if isinstance(origin, type) and issubclass(origin, (tuple, list, frozenset)):
        return any(may_hold_models(a) for a in args if a is not Ellipsis)
    return False  # a dict or another mapping: the walk does not go down those


def nested_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``cls`` whose values can hold a model."""
    return tuple(
        name for name, info in cls.model_fields.items() if may_hold_models(info.annotation)
    )


class SharedFields(set[str]):
    """A set of field names shared by many model instances: copied, never changed."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)


class FieldSets:
    """The shared sets, one per distinct set of names; thread-safe (a race makes two)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._shared: dict[frozenset[str], SharedFields] = {}
        self._limit = limit
        self._fields: dict[type[BaseModel], tuple[str, ...]] = {}

    def compact(self, *roots: Any) -> None:
        """Share the field-name sets of every frozen model reachable from ``roots``
        through fields, tuples, lists and frozensets."""
        stack: list[Any] = [r for r in roots if isinstance(r, _NESTED)]
        while stack:
            item = stack.pop()
            if isinstance(item, BaseModel):
                if self._share(item):
                    cls = type(item)
                    names = self._fields.get(cls)
                    if names is None:
                        names = self._fields.setdefault(cls, nested_fields(cls))
                    values = item.__dict__
                    stack.extend(v for name in names if isinstance(v := values.get(name), _NESTED))
            else:
                stack.extend(v for v in item if isinstance(v, _NESTED))

    def _share(self, model: BaseModel) -> bool:
        """Share ``model``'s set; False when it was shared already (with every model
        below it), or when the model is not frozen (configuration, shared as it is)."""
        names = model.__pydantic_fields_set__
        if type(names) is SharedFields or not model.model_config.get("frozen"):
            return False
        key = frozenset(names)
        shared = self._shared.get(key)
        if shared is None:
            if len(self._shared) >= self._limit:
                return True
            shared = self._shared.setdefault(key, SharedFields(key))
        object.__setattr__(model, "__pydantic_fields_set__", shared)
        return True
