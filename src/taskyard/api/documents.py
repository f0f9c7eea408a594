"""Reading graph documents (YAML or JSON) without losing a key given twice.

Loaders keep the last of two equal keys without a word, which would hide a duplicate
label; these loaders remember the duplicates and :func:`check_duplicates` refuses them,
naming the label (or the key and its task). Used by ``taskyard graph submit`` for files
and by the HTTP API for request bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NoReturn

import yaml

from taskyard.model.errors import InvalidInput


class KeyedMapping(dict[Any, Any]):
    """A mapping read from a document, with the keys it gave more than once (reported
    by :func:`check_duplicates`, which knows whether a key is a label or a task field)."""

    __slots__ = ("duplicates",)

    def __init__(self, pairs: list[tuple[Any, Any]],
                 duplicates: list[tuple[Any, int | None]]) -> None:
        super().__init__(pairs)
        self.duplicates = duplicates


def json_pairs(pairs: list[tuple[Any, Any]]) -> KeyedMapping:
    """``object_pairs_hook`` for JSON (which gives no line numbers)."""
    seen: set[Any] = set()
    duplicates: list[tuple[Any, int | None]] = []
    for key, _ in pairs:
        if key in seen:
            duplicates.append((key, None))
        seen.add(key)
    return KeyedMapping(pairs, duplicates)


class GraphYamlLoader(yaml.SafeLoader):
    """A safe YAML loader whose mappings remember their duplicate keys and lines."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> KeyedMapping:
    seen: set[Any] = set()
    duplicates: list[tuple[Any, int | None]] = []
    # Only the keys written in this mapping count: keys a `<<` merge brings in may be
    # overridden, as YAML intends.
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in seen:
                duplicates.append((key, key_node.start_mark.line + 1))
            seen.add(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key",
                key_node.start_mark) from None
    loader.flatten_mapping(node)
    return KeyedMapping(loader.construct_pairs(node, deep=True), duplicates)


GraphYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _nested_mappings(value: Any) -> Iterator[KeyedMapping]:
    """Every mapping in ``value``, itself included, outermost first (no recursion). A
    part the YAML repeats by alias is looked at once: its keys were read once, and a
    file of aliases of aliases would otherwise take exponential time."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            if isinstance(item, KeyedMapping):
                yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def check_duplicates(doc: Any, where: str) -> None:
    """InvalidInput naming the label (or key) that ``doc`` gives twice; ``where``: the
    file or the body it came from."""

    def fail(what: str, key: Any, line: int | None) -> NoReturn:
        at = "" if line is None else f" (line {line})"
        raise InvalidInput(f"{where}: duplicate {what} {key!r}{at}")

    if not isinstance(doc, KeyedMapping):
        return
    for key, line in doc.duplicates:
        fail("key", key, line)
    tasks = doc.get("tasks")
    for key, line in tasks.duplicates if isinstance(tasks, KeyedMapping) else ():
        fail("label", key, line)
    for key, value in doc.items():
        if key == "tasks" and isinstance(value, dict):
            for label, body in value.items():
                for mapping in _nested_mappings(body):
                    for dup, line in mapping.duplicates:
                        fail(f"key {dup!r} in task", label, line)
            continue
        for mapping in _nested_mappings(value):
            for dup, line in mapping.duplicates:
                fail(f"key {dup!r} in", key, line)


def load_json_document(text: str | bytes) -> Any:
    """JSON whose mappings remember their duplicate keys (ValueError if not JSON)."""
    return json.loads(text, object_pairs_hook=json_pairs)


def load_yaml_document(text: str) -> Any:
    """YAML (safe) whose mappings remember their duplicate keys and their lines."""
    return yaml.load(text, Loader=GraphYamlLoader)
