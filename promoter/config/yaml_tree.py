"""YAML text to plain data, remembering where each value was written.

Stricter than ``yaml.safe_load`` where a config file needs it: a key written twice in
one mapping is a problem (YAML says keys are unique; PyYAML keeps the last silently),
merge keys (``<<: *defaults``) are expanded, and the nodes reached through aliases are
capped, so that a few lines of nested aliases (an "alias bomb") are refused at once
instead of expanding into millions of values.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor

Location = tuple[int, int]
Path_ = tuple[str | int, ...]

MAX_ALIASED_NODES = 10_000
"""Values reached through aliases, in all; a config that reuses an anchor stays far below."""
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlProblem(Exception):
    """A problem of the YAML text itself, at a line and column (1-based)."""

    def __init__(self, message: str, where: Location) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


def _at(node: yaml.Node) -> Location:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self) -> None:
        self.marks: dict[Path_, Location] = {}
        self._constructor = SafeConstructor()
        self._seen: set[int] = set()
        self._flattened: set[int] = set()
        self._aliased = 0

    def build(self, node: yaml.Node, path: Path_) -> Any:
        if id(node) in self._seen:  # reached again: through an alias
            self._aliased += 1
            if self._aliased > MAX_ALIASED_NODES:
                raise YamlProblem(
                    f"aliases expand to more than {MAX_ALIASED_NODES} values; "
                    "write the repeated parts out, or reuse fewer anchors",
                    _at(node),
                )
        self._seen.add(id(node))
        self.marks.setdefault(path, _at(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise YamlProblem(str(getattr(exc, "problem", None) or exc), _at(node)) from exc

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[Any, Any]:
        if id(node) not in self._flattened:
            self._check_unique(node)
            try:
                # Merge keys: the merged pairs first, then the node's own, which win.
                self._constructor.flatten_mapping(node)
            except yaml.YAMLError as exc:
                raise YamlProblem(str(getattr(exc, "problem", None) or exc), _at(node)) from exc
            self._flattened.add(id(node))
        pairs: dict[Any, tuple[yaml.Node, Location]] = {}
        for key_node, value_node in node.value:
            pairs[self._key(key_node)] = (value_node, _at(key_node))
        out: dict[Any, Any] = {}
        for key, (value_node, where) in pairs.items():
            self.marks[(*path, key)] = where
            out[key] = self.build(value_node, (*path, key))
        return out

    def _check_unique(self, node: yaml.MappingNode) -> None:
        own: dict[Any, Location] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self._key(key_node)
            if key in own:
                line, column = own[key]
                raise YamlProblem(
                    f"duplicate key {key!r} (first written at line {line}, column {column})",
                    _at(key_node),
                )
            own[key] = _at(key_node)

    def _key(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise YamlProblem("a key must be a plain value, not a list or a mapping", _at(node))
        return self._constructor.construct_object(node, deep=True)


def load_tree(text: str) -> tuple[Any, dict[Path_, Location]]:
    """The document's data (None when empty) and each value's position by its path.

    YamlProblem for text that is not YAML, a duplicate key, a bad merge key or an alias bomb.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlProblem(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", where) from exc
    if node is None:
        return None, {}
    builder = _Builder()
    return builder.build(node, ()), builder.marks
